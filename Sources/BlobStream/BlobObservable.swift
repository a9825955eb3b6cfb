/// One of the four observable values of a data source, with its type: what
/// `observe(_:options:_:)` and `values(of:)` subscribe to.
///
/// There are exactly four, so no other value can be asked for (the compiler checks it):
///
/// ```swift
/// let token = source.observe(.isAtEnd, options: [.new]) { change in
///     print("at end:", change.newValue!)   // a Bool
/// }
/// let failed = source.observe(.error) { change in
///     print("failed:", change.newValue!.map(String.init(describing:)) ?? "no")
/// }
/// ```
public struct BlobObservable<Value: Sendable>: Sendable, CustomStringConvertible {
    /// The value's bit in `BlobDataSourceState`'s flags (which observers a change reaches).
    let bit: UInt8
    /// The value in a snapshot.
    let extract: @Sendable (BlobDataSourceStatus) -> Value
    /// The property's name, as in `BlobDataSourceStatus`.
    public let description: String

    private init(bit: UInt8, name: String, extract: @escaping @Sendable (BlobDataSourceStatus) -> Value) {
        self.bit = bit
        self.description = name
        self.extract = extract
    }

    /// The value in `status`.
    public func value(in status: BlobDataSourceStatus) -> Value { extract(status) }
}

extension BlobObservable where Value == Bool {
    /// `BlobDataSourceStatus.isOpenCompleted`: the source finished opening.
    public static var isOpenCompleted: BlobObservable<Bool> {
        BlobObservable(bit: BlobDataSourceState.openBit, name: "isOpenCompleted") { $0.isOpenCompleted }
    }

    /// `BlobDataSourceStatus.hasBytesAvailable`: a `read` would return bytes now.
    public static var hasBytesAvailable: BlobObservable<Bool> {
        BlobObservable(bit: BlobDataSourceState.bytesBit, name: "hasBytesAvailable") { $0.hasBytesAvailable }
    }

    /// `BlobDataSourceStatus.isAtEnd`: every byte has been read.
    public static var isAtEnd: BlobObservable<Bool> {
        BlobObservable(bit: BlobDataSourceState.endBit, name: "isAtEnd") { $0.isAtEnd }
    }
}

extension BlobObservable where Value == (any Error)? {
    /// `BlobDataSourceStatus.error`: the error that stopped the source (sticky).
    public static var error: BlobObservable<(any Error)?> {
        BlobObservable(bit: BlobDataSourceState.errorBit, name: "error") { $0.error }
    }
}
