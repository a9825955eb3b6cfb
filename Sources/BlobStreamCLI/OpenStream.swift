// Opening a SOURCE as a stream, and naming it in failures.

import BlobStream
import Foundation

/// Opens a synchronous stream on SOURCE, at `offset` when given.
package func openStream(_ argument: String, registry: DataSourceRegistry, offset: Int64?) throws -> BlobInputStream {
    let url = try checkedSourceURL(argument, registry: registry)
    let stream = try BlobInputStream(url: url, registry: registry, mode: .synchronous)
    if let offset, offset > 0 {
        guard stream.setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey) else {
            let source = stream.dataSource
            if source.offsetCapability == .none {
                throw BlobStreamError(.offsetUnsupported, "\(argument): this source cannot start at an offset")
            }
            throw BlobStreamError(
                .invalidOffset,
                "\(argument): offset \(offset) refused"
                    + (source.length.map { " (the source is \($0) bytes long)" } ?? ""))
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
