import BlobStream
import Foundation

/// What an upload sends: a factory of fresh sources (an upload that must start again, after
/// a redirect or an authentication challenge, needs the bytes from the start) and the
/// body's length when it is known (Content-Length, progress).
public struct UploadBody: Sendable {
    /// Makes a fresh, unopened source of the whole body.
    public let makeSource: @Sendable () throws -> any BlobDataSource
    /// The body's length in bytes, when known.
    public let length: Int64?
    /// The body's content type, when it has one of its own (multipart bodies do).
    public let contentType: String?
    /// False when a fresh source does not give the whole body again (a pipe, standard
    /// input: what one source read is gone for the next). An upload that must start again
    /// (a 307/308 redirect) then fails with an error naming the redirect rather than send
    /// the rest as if it were the whole.
    public let isRepeatable: Bool
    /// How messages name the body: a path or URL (`"/data/movie.mov"`, `"standard input"`);
    /// nil: they say "the upload's source". The URL an upload goes to is named either way.
    public let name: String?

    /// A body of the sources `makeSource` makes. Give `length` when you know it; see
    /// `probingLength(_:)` for sources that learn theirs when they open (files). Pass
    /// `repeatable: false` when a fresh source does not start the body again (a pipe), and
    /// `name` for messages to name it (a path).
    public init(
        length: Int64?, contentType: String? = nil, repeatable: Bool = true, name: String? = nil,
        makeSource: @escaping @Sendable () throws -> any BlobDataSource
    ) {
        self.makeSource = makeSource
        self.length = length
        self.contentType = contentType
        self.isRepeatable = repeatable
        self.name = name
    }

    /// A body whose length is read from a source opened once for the purpose (a file's
    /// size comes from `fstat` at open). Only a source that can seek is opened to find out:
    /// opening one that reads and discards (a gzip stream, an archive member, a pipe) could
    /// consume bytes that a fresh source over the same pipe would then miss, so such a body
    /// gets the length the source knows before opening (usually none: it goes chunked).
    ///
    /// - Throws: the source's error when it cannot be opened.
    public static func probingLength(
        contentType: String? = nil, repeatable: Bool = true, name: String? = nil,
        _ makeSource: @escaping @Sendable () throws -> any BlobDataSource
    ) throws -> UploadBody {
        let source = try makeSource()
        guard source.offsetCapability == .seek else {
            let length = source.length
            source.close()
            return UploadBody(
                length: length, contentType: contentType, repeatable: repeatable, name: name, makeSource: makeSource)
        }
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        defer { stream.close() }
        if let error = stream.streamError { throw error }
        return UploadBody(
            length: stream.dataSource.length, contentType: contentType, repeatable: repeatable, name: name,
            makeSource: makeSource)
    }

    /// The same body starting at `offset` (a resumed upload): the length shrinks by the
    /// offset, each fresh source starts there.
    ///
    /// - Throws: `.invalidOffset` when `offset` is past a known length.
    public func starting(at offset: Int64) throws -> UploadBody {
        guard offset > 0 else { return self }
        if let length, offset > length {
            throw BlobStreamError(.invalidOffset, "offset \(offset) is past the end of the body (\(length) bytes)")
        }
        let make = makeSource
        return UploadBody(
            length: length.map { $0 - offset }, contentType: contentType, repeatable: isRepeatable, name: name
        ) {
            try OffsetSource.make(make(), offset: offset)
        }
    }
}

/// Starts a source at an offset with `seek(to:)` before it opens.
enum OffsetSource {
    /// `source`, moved to `offset`; the source's refusal (`.offsetUnsupported`,
    /// `.invalidOffset`) as it gave it.
    static func make(_ source: any BlobDataSource, offset: Int64) throws -> any BlobDataSource {
        try source.seek(to: offset)
        return source
    }
}
