import Foundation

// The typed offset API's defaults (`readOffset`, `seek(to:)`) and their bridge to and from
// the original's `.fileCurrentOffsetKey` property. See "Offsets" in `BlobDataSource`.

extension BlobDataSource {
    /// `.fileCurrentOffsetKey` as an integer, for a source that implements the key
    /// (`property(forKey:)`); nil otherwise.
    public var readOffset: Int64? {
        OffsetBridge.run(self) { BlobOffset.value(from: property(forKey: .fileCurrentOffsetKey)) } ?? nil
    }

    /// Moves with `setProperty(_:forKey: .fileCurrentOffsetKey)`, for a source that
    /// implements the key; throws `.offsetUnsupported` when `offsetCapability` is `.none`
    /// and `.invalidOffset` when the offset is negative or refused.
    public func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0 else { throw BlobStreamError(.invalidOffset, "offset \(offset) is negative") }
        guard offsetCapability != .none else {
            throw BlobStreamError(.offsetUnsupported, "\(type(of: self)) cannot move to an offset")
        }
        let accepted = OffsetBridge.run(self) { setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey) }
        guard accepted == true else {
            throw BlobStreamError(.invalidOffset, "the data source refused offset \(offset)")
        }
    }

    /// The `.fileCurrentOffsetKey` answer of a source that implements `readOffset`: an
    /// `NSNumber` of it (nil for other keys). The default `property(forKey:)`; a source that
    /// answers other keys too calls it for this one.
    public func offsetProperty(forKey key: Stream.PropertyKey) -> Any? {
        guard key == .fileCurrentOffsetKey else { return nil }
        let offset: Int64?? = OffsetBridge.run(self) { readOffset }
        return (offset ?? nil).map { NSNumber(value: $0) }
    }

    /// Sets `.fileCurrentOffsetKey` on a source that implements `seek(to:)`: true when the
    /// value is a non-negative integer and `seek(to:)` accepted it; false for other keys.
    /// The default `setProperty(_:forKey:)`; a source that takes other keys too calls it for
    /// this one.
    public func setOffsetProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        guard key == .fileCurrentOffsetKey, let offset = BlobOffset.value(from: property) else { return false }
        return OffsetBridge.run(self) { (try? seek(to: offset)) != nil } ?? false
    }
}

/// Breaks the circle of the offset defaults: each bridges to the other form, so a source
/// that implements neither would call back and forth forever. A bridge that is already
/// running for the same source on the same thread answers "nothing" instead (nil offset,
/// refused move).
enum OffsetBridge {
    /// The sources whose bridge runs on this thread.
    private final class Active {
        var sources: Set<ObjectIdentifier> = []
    }

    private static let key = "BlobStream.OffsetBridge"

    /// Runs `body` for `source`, or returns nil when a bridge for `source` already runs on
    /// this thread.
    static func run<T>(_ source: AnyObject, _ body: () -> T) -> T? {
        let dictionary = Thread.current.threadDictionary
        let active: Active
        if let existing = dictionary[key] as? Active {
            active = existing
        } else {
            active = Active()
            dictionary[key] = active
        }
        let id = ObjectIdentifier(source)
        guard active.sources.insert(id).inserted else { return nil }
        defer { active.sources.remove(id) }
        return body()
    }
}
