import Crypto
import Foundation

/// A request as AWS Signature Version 4 sees it: method, path and query in their decoded
/// form (the signer percent-encodes them), and the header fields.
public struct SigV4Request: Sendable {
    /// The HTTP method, e.g. `"PUT"`.
    public var method: String
    /// The path, decoded, starting with `/` (for S3 path-style: `/bucket/key`).
    public var path: String
    /// The query parameters, decoded, in any order (a flag such as `uploads` has an empty value).
    public var query: [(name: String, value: String)]
    /// The header fields, names in any case; `Host` must be among them.
    public var headers: [(name: String, value: String)]

    /// Makes a request.
    public init(
        method: String, path: String, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = []
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
    }

    /// The value of the first header field named `name` (case-insensitive), if any.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The path as sent on the wire: every byte but unreserved ones and `/` percent-encoded.
    public var encodedPath: String { SigV4Signer.uriEncode(path, keepingSlash: true) }

    /// The query as sent on the wire: the canonical query string (sorted, encoded).
    public var encodedQuery: String { SigV4Signer.canonicalQuery(query) }
}

/// Signs requests with AWS Signature Version 4 (`AWS4-HMAC-SHA256`), the way S3 checks them.
///
/// ```swift
/// let signer = SigV4Signer(credentials: credentials, region: "us-east-1")
/// let signed = signer.sign(request, payloadHash: SigV4Signer.sha256Hex(body), date: Date())
/// ```
///
/// The payload hash is the SHA-256 of the body, or `UNSIGNED-PAYLOAD` (`unsignedPayload`)
/// when another signed header binds the body (`Content-MD5`, `x-amz-checksum-…`); S3 requests
/// carry it in `x-amz-content-sha256` as S3 requires. S3 does not normalize paths
/// (`normalizesPath` is false by default): `a//b` and `a/./b` are different keys. Presigned
/// URLs (query signing): `presign(_:expiresIn:date:)`.
public struct SigV4Signer: Sendable {
    /// The keys to sign with.
    public var credentials: S3Credentials
    /// The region the request is for (`us-east-1`).
    public var region: String
    /// The service name in the credential scope (`s3`).
    public var service: String
    /// True: remove `.` and `..` segments and empty segments from the path before signing
    /// (what most AWS services expect; never S3).
    public var normalizesPath: Bool
    /// True: add `x-amz-content-sha256` with the payload hash to the signed headers (S3).
    public var addsContentSHA256Header: Bool

    /// A signer for `service` (S3 by default) in `region`.
    public init(
        credentials: S3Credentials, region: String, service: String = "s3", normalizesPath: Bool = false,
        addsContentSHA256Header: Bool = true
    ) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.normalizesPath = normalizesPath
        self.addsContentSHA256Header = addsContentSHA256Header
    }

    /// The payload hash of a request whose body the signature does not cover (a presigned
    /// URL, or a body bound by a signed `Content-MD5` or `x-amz-checksum-…` instead).
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// The SHA-256 of an empty body, in hex.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The SHA-256 of `data`, lowercase hex.
    public static func sha256Hex<D: DataProtocol>(_ data: D) -> String { hex(SHA256.hash(data: data)) }

    /// `request` with the headers signing adds (`X-Amz-Date`, `X-Amz-Content-SHA256`,
    /// `X-Amz-Security-Token` when the credentials have a session token) and `Authorization`.
    public func sign(_ request: SigV4Request, payloadHash: String, date: Date) -> SigV4Request {
        let prepared = prepare(request, payloadHash: payloadHash, date: date)
        var signed = prepared
        signed.headers.append(
            (name: "Authorization", value: authorization(prepared, payloadHash: payloadHash, date: date)))
        return signed
    }

    /// `request` with the headers that are signed besides its own: `X-Amz-Date`, and
    /// `X-Amz-Content-SHA256` and `X-Amz-Security-Token` where they apply.
    public func prepare(_ request: SigV4Request, payloadHash: String, date: Date) -> SigV4Request {
        var prepared = request
        prepared.headers.append((name: "X-Amz-Date", value: Self.timestamp(date)))
        if addsContentSHA256Header { prepared.headers.append((name: "X-Amz-Content-SHA256", value: payloadHash)) }
        if let token = credentials.sessionToken {
            prepared.headers.append((name: "X-Amz-Security-Token", value: token))
        }
        return prepared
    }

    /// The `Authorization` value for a prepared request (see `prepare`).
    public func authorization(_ prepared: SigV4Request, payloadHash: String, date: Date) -> String {
        let canonical = canonicalRequest(prepared, payloadHash: payloadHash)
        let signature = self.signature(stringToSign: stringToSign(canonicalRequest: canonical, date: date), date: date)
        return "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope(date)), "
            + "SignedHeaders=\(signedHeaders(prepared)), Signature=\(signature)"
    }

    /// The canonical request of a prepared request: method, encoded path, canonical query,
    /// canonical headers, signed headers, payload hash, one per line.
    public func canonicalRequest(_ prepared: SigV4Request, payloadHash: String) -> String {
        let headers = canonicalHeaders(prepared)
        let path = normalizesPath ? Self.normalized(prepared.path) : prepared.path
        return [
            prepared.method.uppercased(),
            Self.uriEncode(path, keepingSlash: true),
            Self.canonicalQuery(prepared.query),
            headers.map { "\($0.name):\($0.value)\n" }.joined(),
            headers.map(\.name).joined(separator: ";"),
            payloadHash,
        ].joined(separator: "\n")
    }

    /// The string to sign: algorithm, timestamp, credential scope, hash of the canonical request.
    public func stringToSign(canonicalRequest: String, date: Date) -> String {
        "AWS4-HMAC-SHA256\n\(Self.timestamp(date))\n\(scope(date))\n\(Self.sha256Hex(Data(canonicalRequest.utf8)))"
    }

    /// The hex HMAC of `stringToSign` with the signing key of `date`.
    public func signature(stringToSign: String, date: Date) -> String {
        Self.hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: signingKey(date: date)))
    }

    /// The signing key: HMAC chain of `AWS4`+secret over the date, region, service and `aws4_request`.
    public func signingKey(date: Date) -> SymmetricKey {
        var key = SymmetricKey(data: Data(("AWS4" + credentials.secretAccessKey).utf8))
        for part in [Self.day(date), region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return key
    }

    /// `DAY/REGION/SERVICE/aws4_request`.
    public func scope(_ date: Date) -> String { "\(Self.day(date))/\(region)/\(service)/aws4_request" }

    /// The signed header names, lowercase, sorted, joined by `;`.
    public func signedHeaders(_ prepared: SigV4Request) -> String {
        canonicalHeaders(prepared).map(\.name).joined(separator: ";")
    }

    /// Lowercase names, sorted; values trimmed, inner runs of spaces made one; the values of
    /// a repeated name joined by `,` in their order.
    func canonicalHeaders(_ request: SigV4Request) -> [(name: String, value: String)] {
        var order: [String] = []
        var values: [String: [String]] = [:]
        for (name, value) in request.headers {
            let key = name.lowercased()
            if values[key] == nil { order.append(key) }
            let squeezed = value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" })
                .joined(separator: " ")
            values[key, default: []].append(squeezed)
        }
        return order.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            .map { (name: $0, value: values[$0]!.joined(separator: ",")) }
    }

    /// The canonical query string: names and values encoded, sorted by name then value.
    public static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        query.map { (uriEncode($0.name, keepingSlash: false), uriEncode($0.value, keepingSlash: false)) }
            .sorted { a, b in
                a.0 == b.0
                    ? Array(a.1.utf8).lexicographicallyPrecedes(Array(b.1.utf8))
                    : Array(a.0.utf8).lexicographicallyPrecedes(Array(b.0.utf8))
            }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// Percent-encodes every byte of the UTF-8 form but `A-Z a-z 0-9 - . _ ~` (and `/`
    /// when `keepingSlash`), with uppercase hex, as SigV4 and S3 define it.
    public static func uriEncode(_ text: String, keepingSlash: Bool) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepingSlash:
                out.append("/")
            default:
                out +=
                    "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// The path without empty, `.` and `..` segments (kept: a trailing slash).
    static func normalized(_ path: String) -> String {
        var segments: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..": _ = segments.popLast()
            default: segments.append(segment)
            }
        }
        let joined = "/" + segments.joined(separator: "/")
        return path.hasSuffix("/") && !segments.isEmpty ? joined + "/" : joined
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC.
    public static func timestamp(_ date: Date) -> String {
        let c = utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
    }

    /// `yyyyMMdd` in UTC.
    static func day(_ date: Date) -> String { String(timestamp(date).prefix(8)) }

    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    static func hex<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
