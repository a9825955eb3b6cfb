extension BlobDataSource {
    /// Subscribes to one of the source's values (KVO-like); works on `any BlobDataSource`.
    /// See `BlobDataSourceState.observe(_:options:_:)`.
    ///
    /// ```swift
    /// let token = source.observe(.isOpenCompleted, options: [.old, .new]) { change in
    ///     print(change.oldValue!, "->", change.newValue!)
    /// }
    /// ```
    public func observe<Value>(
        _ value: BlobObservable<Value>,
        options: BlobObservationOptions = [.new],
        _ handler: @escaping @Sendable (BlobObservedChange<Value>) -> Void
    ) -> BlobObservation {
        state.observe(value, options: options, handler)
    }

    /// The current value of one of the source's values, then each new one; see
    /// `BlobDataSourceState.values(of:)`.
    public func values<Value>(of value: BlobObservable<Value>) -> AsyncStream<Value> {
        state.values(of: value)
    }
}

extension BlobDataSourceState {
    /// The current value, then each new value as it changes, as an `AsyncSequence`:
    ///
    /// ```swift
    /// for await opened in source.values(of: .isOpenCompleted) where opened { break }
    /// ```
    ///
    /// Values are buffered in order until the consumer takes them. The sequence does not
    /// end by itself (a value may change again): it ends when the consuming task is
    /// cancelled, or the sequence is dropped, which also ends the subscription.
    public func values<Value>(of value: BlobObservable<Value>) -> AsyncStream<Value> {
        AsyncStream { continuation in
            let token = observe(value, options: [.initial, .new]) { change in
                if let new = change.newValue { continuation.yield(new) }
            }
            continuation.onTermination = { _ in token.invalidate() }
        }
    }
}
