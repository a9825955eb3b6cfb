import Foundation

// URLs in messages, and where a request's credentials may go. Passwords in URLs
// (`http://user:secret@host/…`) are never printed whole: messages show them as curl does,
// without the password. Credentials (an `Authorization` a hook adds, a SigV4 signature, a
// session token) are sent only to the origin they were made for: the same scheme, host and
// port (RFC 6454).

extension BlobURL {
    /// `text` with the password of every URL in it left out: `http://user:secret@host/x`
    /// becomes `http://user@host/x`, as curl shows it. Works on any text: a plain URL, a
    /// composed one (`archive:https://u:p@host/a.tar!/m`) or a message that quotes URLs.
    /// Text with no `scheme://user:password@` in it is returned unchanged.
    public static func redactingPasswords(_ text: String) -> String {
        guard text.contains("@"), text.contains("://") else { return text }
        var out = ""
        var rest = Substring(text)
        while let marker = rest.range(of: "://") {
            out += rest[..<marker.upperBound]
            rest = rest[marker.upperBound...]
            // The authority ends at the first '/', '?', '#', whitespace or quote.
            let end =
                rest.firstIndex(where: { "/?#\"' \t\n".contains($0) }) ?? rest.endIndex
            let authority = rest[..<end]
            if let at = authority.lastIndex(of: "@"),
                let colon = authority[..<at].firstIndex(of: ":")
            {
                out += authority[..<colon]
                out += authority[at...]
            } else {
                out += authority
            }
            rest = rest[end...]
        }
        return out + rest
    }

    /// Whether `a` and `b` have the same origin: scheme and host alike (case-insensitive),
    /// and the same port, a missing one read as the scheme's default (80 for http, 443 for
    /// https). Credentials made for one are never sent to the other.
    public static func isSameOrigin(_ a: URL, _ b: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int?) {
            let scheme = url.scheme?.lowercased() ?? ""
            let port = url.port ?? ["http": 80, "https": 443][scheme]
            return (scheme, url.host?.lowercased() ?? "", port)
        }
        let (sa, ha, pa) = origin(a)
        let (sb, hb, pb) = origin(b)
        return !sa.isEmpty && sa == sb && ha == hb && pa == pb
    }

    /// Whether `url` carries its own authorization, which its server checks without any
    /// header of ours: a presigned URL (SigV4's `X-Amz-Signature`, or SigV2's `Signature`
    /// with `Expires`). A redirect to another origin is followed, without credentials, only
    /// to such a URL.
    public static func isPresigned(_ url: URL) -> Bool {
        let names = Set(
            (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { $0.name.lowercased() })
        return names.contains("x-amz-signature") || (names.contains("signature") && names.contains("expires"))
    }
}
