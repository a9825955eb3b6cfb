import BlobStream
import Foundation
import NIOCore
import NIOHTTP1

/// A part stored in an unfinished multipart upload (ListParts).
public struct S3StoredPart: Sendable, Equatable {
    /// Its number, 1 ... 10,000.
    public var partNumber: Int
    /// Its ETag without quotes (the hex MD5 of its bytes on S3 and Swift's s3api).
    public var etag: String
    /// Its size in bytes.
    public var size: Int64
}

/// An unfinished multipart upload (ListMultipartUploads).
public struct S3PendingUpload: Sendable, Equatable {
    /// The key it is for.
    public var key: String
    /// Its upload id.
    public var uploadID: String
    /// When it was started, as the store wrote it (ISO 8601).
    public var initiated: String
}

/// A part as CompleteMultipartUpload names it: number, ETag, and its checksum (base64)
/// when the upload has one.
struct S3CompletedPart: Sendable {
    var number: Int
    var etag: String
    var checksum: String? = nil
}

/// What HeadObject tells of an object.
public struct S3ObjectInfo: Sendable, Equatable {
    /// Its size in bytes.
    public var size: Int64
    /// Its ETag without quotes (`md5` or `md5-of-md5s-N` for a multipart object).
    public var etag: String
    /// Its content type, if any.
    public var contentType: String?
    /// Its `Cache-Control`, if any.
    public var cacheControl: String? = nil
    /// Its `Content-Disposition`, if any.
    public var contentDisposition: String? = nil
    /// Its `Content-Encoding`, if any.
    public var contentEncoding: String? = nil
}

extension S3Client {
    /// Stores `body` as the object at `location` in one request, its SHA-256 signed as the
    /// payload hash (the one check of the body, which the store verifies); returns its ETag
    /// (without quotes).
    public func putObject(
        _ location: S3Location, body: ByteBuffer, contentType: String? = nil, metadata: [(String, String)] = []
    ) async throws -> String {
        let digest = DigestPlan(sha256: true).digest(body)
        return try await putObject(
            location, payload: .bytes(body), digest: digest, check: .payloadSHA256,
            headers: Self.objectHeaders(contentType: contentType, metadata: metadata)
        ).etag
    }

    /// `putObject` with a body in memory or streamed, its `digest` computed as `check` needs,
    /// and the object's header fields; returns the ETag and the answer.
    func putObject(
        _ location: S3Location, payload: Payload, digest: PartDigest, check: S3BodyCheck,
        headers: [(name: String, value: String)]
    ) async throws -> (etag: String, response: Response) {
        let response = try await send(
            "PutObject", method: .PUT, location: location,
            headers: headers + digest.headers(sendingMD5: check == .contentMD5), payload: payload,
            payloadHash: digest.payloadHash)
        return (Self.unquoted(response.headers.first(name: "ETag") ?? ""), response)
    }

    /// The object's size, ETag and type.
    public func headObject(_ location: S3Location) async throws -> S3ObjectInfo {
        let response = try await send("HeadObject", method: .HEAD, location: location)
        guard let length = response.headers.first(name: "Content-Length").flatMap({ Int64($0) }) else {
            throw BlobStreamError.s3(
                .invalidResponse, "HeadObject \(location): no Content-Length")
        }
        return S3ObjectInfo(
            size: length, etag: Self.unquoted(response.headers.first(name: "ETag") ?? ""),
            contentType: response.headers.first(name: "Content-Type"),
            cacheControl: response.headers.first(name: "Cache-Control"),
            contentDisposition: response.headers.first(name: "Content-Disposition"),
            contentEncoding: response.headers.first(name: "Content-Encoding"))
    }

    /// The object's bytes, or those of `range` (`bytes=0-9` semantics: lower and upper bound included).
    public func getObject(_ location: S3Location, range: ClosedRange<Int64>? = nil) async throws -> ByteBuffer {
        let headers = range.map { [(name: "Range", value: "bytes=\($0.lowerBound)-\($0.upperBound)")] } ?? []
        return try await send("GetObject", method: .GET, location: location, headers: headers).body
    }

    /// Starts a multipart upload; returns its upload id.
    public func createMultipartUpload(
        _ location: S3Location, contentType: String? = nil, metadata: [(String, String)] = []
    ) async throws -> String {
        try await createMultipartUpload(
            location, headers: Self.objectHeaders(contentType: contentType, metadata: metadata)
        )
        .uploadID
    }

    /// Starts a multipart upload with the object's header fields (`x-amz-checksum-algorithm`
    /// among them, when asked); returns its id and the checksum algorithm the store says it
    /// keeps for it (nil: the store keeps none, or was not asked).
    func createMultipartUpload(_ location: S3Location, headers: [(name: String, value: String)]) async throws -> (
        uploadID: String, checksumAlgorithm: String?
    ) {
        let response = try await send(
            "CreateMultipartUpload", method: .POST, location: location, query: [("uploads", "")], headers: headers)
        let document = try Self.document(response, "CreateMultipartUpload", location)
        guard let id = document["UploadId"], !id.isEmpty else {
            throw BlobStreamError.s3(
                .invalidResponse, "CreateMultipartUpload \(location): no UploadId in the answer")
        }
        return (id, response.headers.first(name: "x-amz-checksum-algorithm") ?? document["ChecksumAlgorithm"])
    }

    /// Sends part `number` of upload `uploadID`, its SHA-256 signed as the payload hash (the
    /// one check of the body, which the store verifies); returns its ETag (without quotes).
    public func uploadPart(_ location: S3Location, uploadID: String, number: Int, body: ByteBuffer) async throws
        -> String
    {
        try await uploadPart(
            location, uploadID: uploadID, number: number, payload: .bytes(body),
            digest: DigestPlan(sha256: true).digest(body), check: .payloadSHA256)
    }

    /// `uploadPart` with a body in memory or streamed, its `digest` computed as `check` needs.
    func uploadPart(
        _ location: S3Location, uploadID: String, number: Int, payload: Payload, digest: PartDigest,
        check: S3BodyCheck
    ) async throws -> String {
        let response = try await send(
            "UploadPart \(number)", method: .PUT, location: location,
            query: [("partNumber", String(number)), ("uploadId", uploadID)],
            headers: digest.headers(sendingMD5: check == .contentMD5), payload: payload,
            payloadHash: digest.payloadHash)
        guard let etag = response.headers.first(name: "ETag") else {
            throw BlobStreamError.s3(
                .invalidResponse, "UploadPart \(number) \(location): no ETag in the answer")
        }
        return Self.unquoted(etag)
    }

    /// Every part stored so far in upload `uploadID`, following the pages to the end.
    public func listParts(_ location: S3Location, uploadID: String) async throws -> [S3StoredPart] {
        try await listPartsAndChecksum(location, uploadID: uploadID).parts
    }

    /// `listParts`, and the checksum algorithm the store keeps for the upload (nil: none).
    func listPartsAndChecksum(_ location: S3Location, uploadID: String) async throws -> (
        parts: [S3StoredPart], checksumAlgorithm: String?
    ) {
        var parts: [S3StoredPart] = []
        var algorithm: String?
        var marker: String?
        repeat {
            var query = [(name: "uploadId", value: uploadID)]
            if let marker { query.append((name: "part-number-marker", value: marker)) }
            let response = try await send("ListParts", method: .GET, location: location, query: query)
            let document = try Self.document(response, "ListParts", location)
            algorithm = algorithm ?? document["ChecksumAlgorithm"]
            for part in document.children("Part") {
                guard let number = part["PartNumber"].flatMap({ Int($0) }),
                    let size = part["Size"].flatMap({ Int64($0) })
                else {
                    throw BlobStreamError.s3(
                        .invalidResponse, "ListParts \(location): a part without number or size")
                }
                parts.append(S3StoredPart(partNumber: number, etag: Self.unquoted(part["ETag"] ?? ""), size: size))
            }
            if document["IsTruncated"] == "true" {
                guard let next = document["NextPartNumberMarker"], next != marker, !next.isEmpty else {
                    throw BlobStreamError.s3(
                        .invalidResponse, "ListParts \(location): a truncated page without a next marker")
                }
                marker = next
            } else {
                marker = nil
            }
        } while marker != nil
        return (parts, algorithm)
    }

    /// The unfinished uploads for exactly `location`'s key (one page: Swift's s3api cannot page it).
    public func listMultipartUploads(_ location: S3Location) async throws -> [S3PendingUpload] {
        let response = try await send(
            "ListMultipartUploads", method: .GET, location: nil, bucket: location.bucket,
            query: [("uploads", ""), ("prefix", location.key)])
        let document = try Self.document(response, "ListMultipartUploads", location)
        return document.children("Upload").compactMap { upload in
            guard let key = upload["Key"], key == location.key, let id = upload["UploadId"] else { return nil }
            return S3PendingUpload(key: key, uploadID: id, initiated: upload["Initiated"] ?? "")
        }
    }

    /// Finishes upload `uploadID` from `parts` (number and ETag, in order); returns the
    /// object's ETag. A 200 answer that holds an `<Error>` document is an error.
    public func completeMultipartUpload(_ location: S3Location, uploadID: String, parts: [(number: Int, etag: String)])
        async throws -> String
    {
        try await completeMultipartUpload(
            location, uploadID: uploadID, parts: parts.map { S3CompletedPart(number: $0.number, etag: $0.etag) },
            checksum: nil
        ).etag
    }

    /// Finishes upload `uploadID` from `parts`, with their checksums when the upload has one
    /// (`checksum`: the algorithm, its type, and the whole object's value for a full-object
    /// checksum); returns the ETag, the object's checksum as the store gives it, and the answer.
    func completeMultipartUpload(
        _ location: S3Location, uploadID: String, parts: [S3CompletedPart],
        checksum: (algorithm: S3ChecksumAlgorithm, type: S3ChecksumType, object: String?)?
    ) async throws -> (etag: String, checksum: String?, response: Response) {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts {
            xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\"\(S3XMLWriter.escape(part.etag))\"</ETag>"
            if let checksum, let value = part.checksum {
                let name = checksum.algorithm.elementName
                xml += "<\(name)>\(S3XMLWriter.escape(value))</\(name)>"
            }
            xml += "</Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let body = ByteBuffer(string: xml)
        // No Content-Type: a store may give the object the completion's (OpenStack Swift's
        // s3api does, when CreateMultipartUpload named none): `application/xml`.
        var headers: [(name: String, value: String)] = []
        if let checksum {
            headers.append((name: "x-amz-checksum-type", value: checksum.type.rawValue))
            if let object = checksum.object { headers.append((name: checksum.algorithm.headerName, value: object)) }
        }
        let response = try await send(
            "CompleteMultipartUpload", method: .POST, location: location, query: [("uploadId", uploadID)],
            headers: headers, body: body)
        let document = try Self.document(response, "CompleteMultipartUpload", location)
        guard let etag = document["ETag"] else {
            throw BlobStreamError.s3(
                .invalidResponse, "CompleteMultipartUpload \(location): no ETag in the answer")
        }
        return (Self.unquoted(etag), checksum.flatMap { document[$0.algorithm.elementName] }, response)
    }

    /// Abandons upload `uploadID`: the store drops its parts.
    public func abortMultipartUpload(_ location: S3Location, uploadID: String) async throws {
        _ = try await send("AbortMultipartUpload", method: .DELETE, location: location, query: [("uploadId", uploadID)])
    }

    /// `Content-Type` and `x-amz-meta-NAME` fields.
    static func objectHeaders(contentType: String?, metadata: [(String, String)]) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        if let contentType { headers.append((name: "Content-Type", value: contentType)) }
        for (name, value) in metadata { headers.append((name: "x-amz-meta-\(name.lowercased())", value: value)) }
        return headers
    }

    /// The answer's XML root; an `<Error>` root (S3 may send one with 200) is thrown.
    static func document(_ response: Response, _ operation: String, _ location: S3Location) throws -> S3XMLElement {
        let document: S3XMLElement
        do {
            document = try S3XMLElement.parse(Data(response.body.readableBytesView))
        } catch {
            throw BlobStreamError.s3(
                .invalidResponse, "\(operation) \(location): the answer is not XML", statusCode: response.statusCode,
                cause: error)
        }
        if document.name == "Error" {
            throw Self.error(
                operation, "\(operation) \(location)", status: response.statusCode, headers: response.headers,
                body: response.body)
        }
        return document
    }

    /// An ETag without its surrounding quotes.
    static func unquoted(_ etag: String) -> String {
        etag.count >= 2 && etag.hasPrefix("\"") && etag.hasSuffix("\"") ? String(etag.dropFirst().dropLast()) : etag
    }
}
