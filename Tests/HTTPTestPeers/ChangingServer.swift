import Foundation

extension SocketPeer {
    /// The validator a `changingServer` sends with each version of its file.
    public enum Validator: String, CaseIterable, Sendable, CustomStringConvertible {
        /// A weak ETag (`W/"a"`, then `W/"b"`), which `If-Match` cannot use.
        case weakETag
        /// Only `Last-Modified` (a date for each version); `If-Unmodified-Since` is ignored.
        case lastModifiedOnly
        /// Neither ETag nor Last-Modified.
        case none
        /// A strong ETag (`"a"`, then `"b"`); `If-Match` is honoured (412 when it differs).
        case strongETag

        /// The case's name, as test arguments print it.
        public var description: String { rawValue }

        /// The header line (with its CRLF) that validates version `which` (0: A, 1: B).
        func header(_ which: Int) -> String {
            let tag = which == 0 ? "a" : "b"
            switch self {
            case .weakETag: return "ETag: W/\"\(tag)\"\r\n"
            case .strongETag: return "ETag: \"\(tag)\"\r\n"
            case .lastModifiedOnly:
                return "Last-Modified: "
                    + (which == 0 ? "Mon, 02 Nov 2026 10:00:00 GMT" : "Tue, 03 Nov 2026 11:00:00 GMT") + "\r\n"
            case .none: return ""
            }
        }
    }

    /// A server of one file that changes after the first request: the first request gets
    /// version A (`versionA`, a file), every later one version B, each with `validator`.
    /// It answers `Range: bytes=F-L`, `bytes=F-` and `bytes=-N` (206), no `Range` (200), a range past
    /// the end (416), on kept-alive connections, and records each request in `requests` as
    /// `RANGE|IF-MATCH|IF-UNMODIFIED-SINCE` (`-` for a header not sent).
    public static func changingServer(versionA: URL, versionB: URL, validator: Validator) throws -> SocketPeer {
        let versions = [try [UInt8](Data(contentsOf: versionA)), try [UInt8](Data(contentsOf: versionB))]
        return try SocketPeer { connection in
            while let head = try await connection.readHead() {
                let fields = ["range", "if-match", "if-unmodified-since"].map { head.headerValue($0) ?? "-" }
                let which = connection.record(fields.joined(separator: "|"), in: "requests") == 0 ? 0 : 1
                try await answer(connection, head, versions[which], validator, which)
            }
        }
    }

    private static func answer(
        _ connection: PeerConnection, _ head: String, _ body: [UInt8], _ validator: Validator, _ which: Int
    ) async throws {
        let extra = validator.header(which)
        if validator == .strongETag, let ifMatch = head.headerValue("if-match"),
            ifMatch != "\"\(which == 0 ? "a" : "b")\""
        {
            return try await connection.write("HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\(extra)\r\n")
        }
        guard let spec = head.headerValue("range") else {
            try await connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\(extra)\r\n")
            return try await connection.write(body)
        }
        let bounds = spec.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        // `bytes=-N`: the last N bytes.
        let suffix = bounds[0].isEmpty && bounds.count > 1 ? Int(bounds[1]) : nil
        let first = suffix.map { max(0, body.count - $0) } ?? Int(bounds[0]) ?? 0
        guard first < body.count else {
            return try await connection.write(
                "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(body.count)\r\n"
                    + "Content-Length: 0\r\n\(extra)\r\n")
        }
        let last =
            suffix == nil && bounds.count > 1 && !bounds[1].isEmpty
            ? min(Int(bounds[1]) ?? body.count - 1, body.count - 1) : body.count - 1
        let part = body[first...last]
        try await connection.write(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(first)-\(last)/\(body.count)\r\n"
                + "Content-Length: \(part.count)\r\n\(extra)\r\n")
        try await connection.write(part)
    }
}
