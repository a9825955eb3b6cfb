// Opening a SOURCE as a stream, and naming it in failures.

import BlobStream
import Foundation

/// Opens a synchronous stream on SOURCE, at `offset` when given.
package func openStream(_ argument: String, registry: DataSourceRegistry, offset: Int64?) throws -> BlobInputStream {
    let url = try checkedSourceURL(argument, registry: registry)
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
    if let error = stream.streamError { throw failure(argument, error) }
    return stream
}

/// A failure message that names the SOURCE as given when the error does not already.
package func failure(_ argument: String, _ error: any Error) -> ToolFailure {
    let text: String
    if let error = error as? BlobStreamError, error.code == .sourceFailed, let cause = error.cause {
        text = String(describing: cause)
    } else {
        text = String(describing: error)
    }
    return ToolFailure(message: argument.isEmpty || text.contains(argument) ? text : "\(argument): \(text)")
}
