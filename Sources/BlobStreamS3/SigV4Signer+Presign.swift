import Foundation

extension SigV4Signer {
    /// The longest a presigned URL may be valid: 7 days (604,800 s), as S3 allows.
    public static let longestPresignedExpiry = 604_800

    /// `request` signed in its query (a presigned URL, AWS's "query string authentication"):
    /// its query gains `X-Amz-Algorithm`, `X-Amz-Credential`, `X-Amz-Date`, `X-Amz-Expires`,
    /// `X-Amz-SignedHeaders` (the request's headers, `Host` among them), `X-Amz-Security-Token`
    /// when the credentials have a session token, and `X-Amz-Signature`; the payload is
    /// `UNSIGNED-PAYLOAD`. Whoever has the URL may send the request until `date` plus
    /// `expiresIn` seconds.
    ///
    /// ```swift
    /// let request = SigV4Request(method: "GET", path: "/photos/a.jpg", headers: [("Host", "s3.example.com")])
    /// let signed = signer.presign(request, expiresIn: 3600, date: Date())
    /// let url = "https://s3.example.com" + signed.encodedPath + "?" + signed.encodedQuery
    /// ```
    ///
    /// - Parameters:
    ///   - request: the request to allow (its method, path, query and headers, `Host` among them).
    ///   - expiresIn: seconds, 1 to `longestPresignedExpiry` (clamped to that range).
    ///   - date: when it is signed.
    public func presign(_ request: SigV4Request, expiresIn: Int, date: Date) -> SigV4Request {
        var prepared = request
        let expires = min(max(expiresIn, 1), Self.longestPresignedExpiry)
        prepared.query += [
            (name: "X-Amz-Algorithm", value: "AWS4-HMAC-SHA256"),
            (name: "X-Amz-Credential", value: "\(credentials.accessKeyID)/\(scope(date))"),
            (name: "X-Amz-Date", value: Self.timestamp(date)),
            (name: "X-Amz-Expires", value: String(expires)),
            (name: "X-Amz-SignedHeaders", value: signedHeaders(request)),
        ]
        if let token = credentials.sessionToken {
            prepared.query.append((name: "X-Amz-Security-Token", value: token))
        }
        let canonical = canonicalRequest(prepared, payloadHash: Self.unsignedPayload)
        let signature = self.signature(stringToSign: stringToSign(canonicalRequest: canonical, date: date), date: date)
        prepared.query.append((name: "X-Amz-Signature", value: signature))
        return prepared
    }
}
