import BlobStream
import Foundation

/// What an upload does with a 3xx answer.
package enum UploadRedirect {
    /// The URL to send the whole body to again for a 307 or 308 answer; nil for an answer
    /// that is not a redirect.
    ///
    /// - Throws: `.uploadFailed` naming the redirect: for another 3xx (a client would send
    ///   it on without the body), a missing or invalid `Location`, a body that is not
    ///   repeatable, more than `options.maxRedirects` redirects, or a location of another
    ///   origin than `origin` (the upload's first URL) when `headers` carry credentials and
    ///   the location is not a presigned URL (credentials never leave their origin).
    package static func target(
        status: Int, location: String?, from url: URL, redirects: Int, options: UploadOptions, body: UploadBody,
        origin: URL, headers: [(name: String, value: String)]
    ) throws -> URL? {
        guard (300..<400).contains(status), status != 304 else { return nil }
        let phrase = HTTPURLResponseStatus.text(status)
        let name = phrase.isEmpty ? "HTTP \(status)" : "HTTP \(status) \(phrase)"
        guard let location, !location.isEmpty else {
            throw BlobStreamError(
                .uploadFailed,
                "upload to \(BlobURL.redactingPasswords(url.absoluteString)) failed: \(name) without a Location")
        }
        guard status == 307 || status == 308 else {
            throw BlobStreamError(
                .uploadFailed,
                "upload to \(BlobURL.redactingPasswords(url.absoluteString)) failed: \(name) redirects to \(location), not followed (only 307 and 308 keep the method and body)"
            )
        }
        guard body.isRepeatable else {
            throw BlobStreamError(
                .uploadFailed,
                "upload to \(BlobURL.redactingPasswords(url.absoluteString)) failed: \(name) redirects to \(location), but the body cannot be read again from its start (it comes from a pipe or standard input), so it is not sent again"
            )
        }
        guard redirects < options.maxRedirects else {
            throw BlobStreamError(
                .uploadFailed,
                "upload to \(BlobURL.redactingPasswords(url.absoluteString)) failed: \(name) redirects to \(location), more than \(options.maxRedirects) redirects"
            )
        }
        guard let resolved = URL(string: location, relativeTo: url)?.absoluteURL else {
            throw BlobStreamError(
                .uploadFailed,
                "upload to \(BlobURL.redactingPasswords(url.absoluteString)) failed: \(name) redirects to '\(UploadURL.display(location))', which is not a URL"
            )
        }
        if !BlobURL.isSameOrigin(resolved, origin), headers.contains(where: { isCredential($0.name) }),
            !BlobURL.isPresigned(resolved)
        {
            throw BlobStreamError(
                .uploadFailed,
                "upload to \(BlobURL.redactingPasswords(url.absoluteString)) failed: \(name) redirects to "
                    + "\(UploadURL.display(resolved.absoluteString)), another origin (scheme, host, port), and the "
                    + "request's credentials are never sent there; upload to that URL directly if you trust it")
        }
        do {
            return try UploadURL.validate(resolved)
        } catch let error as BlobStreamError {
            throw BlobStreamError(
                .uploadFailed,
                "upload to \(BlobURL.redactingPasswords(url.absoluteString)) failed: \(name) redirects to \(error.message)"
            )
        }
    }

    /// The headers to send to `target`: all of `headers` at `origin`, and elsewhere all but
    /// the credentials (`Authorization`, `Proxy-Authorization`, `Cookie`,
    /// `X-Amz-Security-Token`), which are made for their origin only.
    package static func headers(
        _ headers: [(name: String, value: String)], for target: URL, origin: URL
    ) -> [(name: String, value: String)] {
        BlobURL.isSameOrigin(target, origin) ? headers : headers.filter { !isCredential($0.name) }
    }

    /// Whether a header carries credentials.
    static func isCredential(_ name: String) -> Bool {
        ["authorization", "proxy-authorization", "cookie", "x-amz-security-token"].contains(name.lowercased())
    }

    /// The error for a 2xx answer that came before the whole body was handed over.
    package static func earlyAnswer(url: String, status: Int, sent: Int64, total: Int64?) -> BlobStreamError {
        let of = total.map { "\(sent) of \($0) bytes" } ?? "\(sent) bytes (before the body's end)"
        return BlobStreamError(
            .uploadFailed,
            "upload to \(url) failed: the server answered HTTP \(status) after \(of) were sent; the upload is incomplete"
        )
    }
}

/// Reason phrases without FoundationNetworking (which the HTTPClient module need not load).
package enum HTTPURLResponseStatus {
    package static func text(_ status: Int) -> String {
        switch status {
        case 300: "Multiple Choices"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 305: "Use Proxy"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        default: ""
        }
    }
}

extension UploadBody {
    /// The error for a client that asks for the body again (a redirect it follows, an
    /// authentication challenge) when the body is not repeatable.
    package var notRepeatable: BlobStreamError {
        BlobStreamError(
            .uploadFailed,
            "the client asked for the body again (a redirect it followed), but it cannot be read again from its start (it comes from a pipe or standard input)"
        )
    }
}
