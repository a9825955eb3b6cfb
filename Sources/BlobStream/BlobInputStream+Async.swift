import Foundation

extension BlobInputStream {
    /// Opens the stream, if `open()` has not been called yet, and waits until the source has
    /// finished opening, without blocking a thread of the caller's: the wait runs on a
    /// dispatch queue of its own. The throwing, awaitable form of `open()`.
    ///
    /// ```swift
    /// let stream = BlobInputStream(dataSource: source)
    /// try await stream.opened()          // throws what stopped the source
    /// ```
    ///
    /// After it returns, `read` and the stream's events work as after a synchronous
    /// `open()`, in either mode. Calling it again on an open stream returns at once.
    ///
    /// - Throws: the stream's `BlobStreamError` when the source failed while opening
    ///   (`streamError`, whose `cause` is the source's own error; `.wouldDeadlock` and
    ///   offset refusals as for `open()`); `.closed` when the stream was closed before or
    ///   while it opened; `CancellationError` when the awaiting task is cancelled (before
    ///   or while it waits), which also closes the stream.
    public func opened() async throws {
        let core = self.core
        if Task.isCancelled {
            core.cancelOpen()
            throw CancellationError()
        }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<StreamCore.OpenOutcome, Never>) in
                DispatchQueue(label: "BlobStream.opened").async { continuation.resume(returning: core.openAndWait()) }
            }
        } onCancel: {
            core.cancelOpen()
        }
        if Task.isCancelled {
            core.cancelOpen()
            throw CancellationError()
        }
        switch outcome {
        case .opened: return
        case .failed(let error): throw error
        case .closed:
            throw BlobStreamError(.closed, "the stream was closed before its source finished opening")
        }
    }

    /// Makes a stream over `dataSource` and waits until it has opened (see `opened()`).
    ///
    /// - Throws: what `opened()` throws; the stream is closed then.
    public static func open(dataSource: sending any BlobDataSource, mode: Mode = .synchronous) async throws
        -> sending BlobInputStream
    {
        let stream = BlobInputStream(dataSource: dataSource, mode: mode)
        do {
            try await stream.opened()
        } catch {
            stream.close()
            throw error
        }
        return stream
    }

    /// Makes a stream over the source `registry` makes for `url` (read as
    /// `url.absoluteString`) and waits until it has opened:
    ///
    /// ```swift
    /// let stream = try await BlobInputStream.open(url: URL(fileURLWithPath: "/data/a.jpg"), registry: registry)
    /// ```
    ///
    /// - Throws: what `DataSourceRegistry.makeSource(url:)` throws, then what `opened()`
    ///   throws; the stream is closed then.
    public static func open(url: URL, registry: DataSourceRegistry, mode: Mode = .synchronous) async throws
        -> sending BlobInputStream
    {
        try await open(dataSource: try registry.makeSource(url: url), mode: mode)
    }

    /// The `String` form of `open(url:registry:mode:)`, for URLs as the registry's grammar
    /// spells them (`archive:file:///data/p.tar!/a.jpg`).
    ///
    /// - Throws: as `open(url:registry:mode:)` with a `URL`.
    public static func open(url: String, registry: DataSourceRegistry, mode: Mode = .synchronous) async throws
        -> sending BlobInputStream
    {
        try await open(dataSource: try registry.makeSource(url: url), mode: mode)
    }
}
