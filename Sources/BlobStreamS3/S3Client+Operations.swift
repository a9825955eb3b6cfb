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

/// What HeadObject tells of an object.
public struct S3ObjectInfo: Sendable, Equatable {
    /// Its size in bytes.
    public var size: Int64
    /// Its ETag without quotes (`md5` or `md5-of-md5s-N` for a multipart object).
    public var etag: String
    /// Its content type, if any.
    public var contentType: String?
}

extension S3Client {
    /// Stores `body` as the object at `location` in one request (with `Content-MD5`);
    /// returns its ETag (without quotes).
    public func putObject(
        _ location: S3Location, body: ByteBuffer, contentType: String? = nil, metadata: [(String, String)] = []
    ) async throws -> String {
        try await putObject(
            location, payload: .bytes(body), contentMD5: Self.contentMD5(body), contentType: contentType,
            metadata: metadata)
    }

    /// `putObject` with a body in memory or streamed (`contentMD5`: its base64 MD5).
    func putObject(
        _ location: S3Location, payload: Payload, contentMD5: String, contentType: String?,
        metadata: [(String, String)]
    ) async throws -> String {
        var headers = Self.objectHeaders(contentType: contentType, metadata: metadata)
        headers.append((name: "Content-MD5", value: contentMD5))
        let response = try await send(
            "PutObject", method: .PUT, location: location, headers: headers, payload: payload)
        return Self.unquoted(response.headers.first(name: "ETag") ?? "")
    }

    /// The object's size, ETag and type.
    public func headObject(_ location: S3Location) async throws -> S3ObjectInfo {
        let response = try await send("HeadObject", method: .HEAD, location: location)
        guard let length = response.headers.first(name: "Content-Length").flatMap({ Int64($0) }) else {
            throw S3Error(
                .invalidResponse, "HeadObject \(location): no Content-Length", bucket: location.bucket,
                key: location.key)
        }
        return S3ObjectInfo(
            size: length, etag: Self.unquoted(response.headers.first(name: "ETag") ?? ""),
            contentType: response.headers.first(name: "Content-Type"))
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
        let response = try await send(
            "CreateMultipartUpload", method: .POST, location: location, query: [("uploads", "")],
            headers: Self.objectHeaders(contentType: contentType, metadata: metadata))
        let document = try Self.document(response, "CreateMultipartUpload", location)
        guard let id = document["UploadId"], !id.isEmpty else {
            throw S3Error(
                .invalidResponse, "CreateMultipartUpload \(location): no UploadId in the answer",
                bucket: location.bucket, key: location.key)
        }
        return id
    }

    /// Sends part `number` of upload `uploadID` with `Content-MD5`; returns its ETag (without quotes).
    public func uploadPart(_ location: S3Location, uploadID: String, number: Int, body: ByteBuffer) async throws
        -> String
    {
        try await uploadPart(
            location, uploadID: uploadID, number: number, payload: .bytes(body), contentMD5: Self.contentMD5(body))
    }

    /// `uploadPart` with a body in memory or streamed (`contentMD5`: its base64 MD5).
    func uploadPart(_ location: S3Location, uploadID: String, number: Int, payload: Payload, contentMD5: String)
        async throws -> String
    {
        let response = try await send(
            "UploadPart \(number)", method: .PUT, location: location,
            query: [("partNumber", String(number)), ("uploadId", uploadID)],
            headers: [(name: "Content-MD5", value: contentMD5)], payload: payload)
        guard let etag = response.headers.first(name: "ETag") else {
            throw S3Error(
                .invalidResponse, "UploadPart \(number) \(location): no ETag in the answer",
                bucket: location.bucket, key: location.key)
        }
        return Self.unquoted(etag)
    }

    /// Every part stored so far in upload `uploadID`, following the pages to the end.
    public func listParts(_ location: S3Location, uploadID: String) async throws -> [S3StoredPart] {
        var parts: [S3StoredPart] = []
        var marker: String?
        repeat {
            var query = [(name: "uploadId", value: uploadID)]
            if let marker { query.append((name: "part-number-marker", value: marker)) }
            let response = try await send("ListParts", method: .GET, location: location, query: query)
            let document = try Self.document(response, "ListParts", location)
            for part in document.children("Part") {
                guard let number = part["PartNumber"].flatMap({ Int($0) }),
                    let size = part["Size"].flatMap({ Int64($0) })
                else {
                    throw S3Error(
                        .invalidResponse, "ListParts \(location): a part without number or size",
                        bucket: location.bucket, key: location.key)
                }
                parts.append(S3StoredPart(partNumber: number, etag: Self.unquoted(part["ETag"] ?? ""), size: size))
            }
            if document["IsTruncated"] == "true" {
                guard let next = document["NextPartNumberMarker"], next != marker, !next.isEmpty else {
                    throw S3Error(
                        .invalidResponse, "ListParts \(location): a truncated page without a next marker",
                        bucket: location.bucket, key: location.key)
                }
                marker = next
            } else {
                marker = nil
            }
        } while marker != nil
        return parts
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
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts {
            xml +=
                "<Part><PartNumber>\(part.number)</PartNumber><ETag>\"\(S3XMLWriter.escape(part.etag))\"</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let body = ByteBuffer(string: xml)
        let response = try await send(
            "CompleteMultipartUpload", method: .POST, location: location, query: [("uploadId", uploadID)],
            headers: [
                (name: "Content-Type", value: "application/xml"), (name: "Content-MD5", value: Self.contentMD5(body)),
            ],
            body: body)
        let document = try Self.document(response, "CompleteMultipartUpload", location)
        guard let etag = document["ETag"] else {
            throw S3Error(
                .invalidResponse, "CompleteMultipartUpload \(location): no ETag in the answer",
                bucket: location.bucket, key: location.key)
        }
        return Self.unquoted(etag)
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
            throw S3Error(
                .invalidResponse, "\(operation) \(location): the answer is not XML", statusCode: response.statusCode,
                bucket: location.bucket, key: location.key, cause: error)
        }
        if document.name == "Error" {
            throw Self.error(
                "\(operation) \(location)", status: response.statusCode, headers: response.headers, body: response.body,
                location: location, bucket: location.bucket)
        }
        return document
    }

    /// An ETag without its surrounding quotes.
    static func unquoted(_ etag: String) -> String {
        etag.count >= 2 && etag.hasPrefix("\"") && etag.hasSuffix("\"") ? String(etag.dropFirst().dropLast()) : etag
    }
}
