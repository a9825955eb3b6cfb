// Opening a SOURCE as a stream, and naming it in failures.

import BlobStream
import Foundation

/// Opens a synchronous stream on SOURCE, at `offset` when given.
package func openStream(_ argument: String, registry: DataSourceRegistry, offset: Int64?) throws -> BlobInputStream {
    let url = try checkedSourceURL(argument, registry: registry)
    do {
        return try openStream(argument, url: url, registry: registry, offset: offset)
    } catch {
        // A member that is not there: the names close to it, and how to list them all.
        var hint = isNotFound(error) ? MemberSuggestions.hint(for: url, argument: argument, registry: registry) : nil
        // `gzip:missing.gz`: not a URL, and no such file either.
        if (error as? BlobStreamError)?.code == .malformedURL, let path = missingInnerPath(url, registry: registry) {
            hint =
                "and no file '\(path)' exists (a path inside gzip: and archive: URLs is taken relative to the current folder)"
        }
        throw failure(argument, error, hint: hint)
    }
}

private func isNotFound(_ error: any Error) -> Bool {
    guard let error = error as? BlobStreamError else { return false }
    if error.code == .notFound { return true }
    return error.code == .sourceFailed && (error.cause as? BlobStreamError)?.code == .notFound
}

private func openStream(_ argument: String, url: String, registry: DataSourceRegistry, offset: Int64?) throws
    -> BlobInputStream
{
    let stream = try BlobInputStream(url: url, registry: registry, mode: .synchronous)
    if let offset, offset > 0 {
        do {
            try stream.seek(to: offset)
        } catch {
            // The stream's refusal says why (`offset 7 is past the end (6 bytes)`); the tool
            // names SOURCE as typed rather than the source's type.
            let why = error.code == .offsetUnsupported ? "this source cannot start at an offset" : error.message
            throw BlobStreamError(error.code, "\(argument): \(why)", cause: error.cause)
        }
    }
    stream.open()
    if let error = stream.streamError { throw error }
    return stream
}

/// A failure message that names the SOURCE as given when the error does not already, and
/// ends with `hint` (what to do about it) when one is given.
package func failure(_ argument: String, _ error: any Error, hint: String? = nil) -> ToolFailure {
    if let hint {
        let plain = failure(argument, error)
        return ToolFailure(message: plain.message + "; " + hint, alreadyReported: plain.alreadyReported)
    }
    let text: String
    if let error = error as? BlobStreamError, error.code == .sourceFailed, let cause = error.cause {
        text = String(describing: cause)
    } else {
        text = String(describing: error)
    }
    return ToolFailure(
        message: argument.isEmpty || text.contains(argument) ? text : "\(argument): \(text)",
        isUsage: (error as? BlobStreamError)?.code == .invalidDestination)
}
