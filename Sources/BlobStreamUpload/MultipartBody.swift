import BlobStream
import Foundation

/// A `multipart/form-data` body composed as a stream from fields and sources: nothing is
/// copied to memory or to temporary files but the few bytes of each part's headers.
///
/// ```swift
/// var form = MultipartBody()
/// form.addField(name: "album", value: "Holidays")
/// form.addFile(name: "photo", filename: "IMG_0001.JPG", contentType: "image/jpeg",
///              body: try .probingLength { FileDataSource(path: "/data/IMG_0001.JPG") })
/// let body = form.uploadBody   // exact length when every part's length is known
/// ```
///
/// When every part's length is known, `uploadBody.length` is the exact total
/// (Content-Length, progress); with one part of unknown length (a gzip payload, a pipe) it
/// is nil and the body goes chunked.
public struct MultipartBody: Sendable {
    private enum Part: Sendable {
        case field(name: String, value: String)
        case file(name: String, filename: String, contentType: String, body: UploadBody)
    }

    /// The boundary between parts.
    public let boundary: String
    private var parts: [Part] = []

    /// An empty body; the default boundary is random.
    public init(boundary: String? = nil) {
        self.boundary = boundary ?? "BlobStream-" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
    }

    /// The `Content-Type` header value, with the boundary.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Adds a text field.
    public mutating func addField(name: String, value: String) {
        parts.append(.field(name: name, value: value))
    }

    /// Adds a file part streamed from `body`'s sources.
    public mutating func addFile(
        name: String, filename: String, contentType: String = "application/octet-stream", body: UploadBody
    ) {
        parts.append(.file(name: name, filename: filename, contentType: contentType, body: body))
    }

    /// The whole body as an `UploadBody`: fresh sources of it, its exact length when every
    /// part's length is known, and `contentType`; repeatable when every part is.
    public var uploadBody: UploadBody {
        let boundary = self.boundary
        let parts = self.parts
        var total: Int64? = 0
        for segment in Self.segments(parts, boundary: boundary) {
            switch segment {
            case .bytes(let data): total = total.map { $0 + Int64(data.count) }
            case .body(let body): total = body.length.flatMap { l in total.map { $0 + l } }
            }
        }
        let repeatable = parts.allSatisfy { part in
            if case .file(_, _, _, let body) = part { return body.isRepeatable }
            return true
        }
        return UploadBody(length: total, contentType: contentType, repeatable: repeatable) {
            try ConcatenatedDataSource(
                Self.segments(parts, boundary: boundary).map { segment in
                    switch segment {
                    case .bytes(let data): return .init(DataBytesSource(data))
                    case .body(let body): return .init(try body.makeSource(), declaredLength: body.length)
                    }
                })
        }
    }

    private enum Segment {
        case bytes(Data)
        case body(UploadBody)
    }

    private static func segments(_ parts: [Part], boundary: String) -> [Segment] {
        var out: [Segment] = []
        var pending = Data()
        for part in parts {
            pending += Data("--\(boundary)\r\n".utf8)
            switch part {
            case .field(let name, let value):
                pending += Data("Content-Disposition: form-data; name=\"\(quote(name))\"\r\n\r\n".utf8)
                pending += Data(value.utf8) + Data("\r\n".utf8)
            case .file(let name, let filename, let contentType, let body):
                pending += Data(
                    ("Content-Disposition: form-data; name=\"\(quote(name))\"; filename=\"\(quote(filename))\"\r\n"
                        + "Content-Type: \(contentType)\r\n\r\n").utf8)
                out.append(.bytes(pending))
                out.append(.body(body))
                pending = Data("\r\n".utf8)
            }
        }
        pending += Data("--\(boundary)--\r\n".utf8)
        out.append(.bytes(pending))
        return out
    }

    /// Escapes a name for a quoted header parameter as browsers do (HTML's form-data
    /// encoding): `"` → `%22`, CR → `%0D`, LF → `%0A`.
    static func quote(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "%22")
            .replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }
}
