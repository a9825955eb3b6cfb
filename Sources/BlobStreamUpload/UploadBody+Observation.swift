import BlobStream
import Foundation

/// Sees the bytes of an upload's body in order as the upload reads them, so that something
/// is built from them in the same pass (an index of what is uploaded, a checksum): the
/// observation hook of every uploader, since every uploader reads its body through the
/// sources the body makes.
///
/// Only a body read once from its start to its end is seen whole and in order: a pipe's, or
/// any body an uploader reads in one pass. When the body is read otherwise (a second source
/// made, a move to an offset: a multipart upload of a file reads its parts at their offsets,
/// a redirect starts again), `lostOrder(_:)` says so, once, and what was seen is not the body.
public protocol UploadBodyObserver: AnyObject, Sendable {
    /// The next bytes the upload read, in order. Called on the thread that reads them.
    func observe(_ bytes: UnsafeRawBufferPointer)
    /// What was seen is not the body in order, and why. Called at most once.
    func lostOrder(_ why: String)
}

extension UploadBody {
    /// The same body, its bytes shown to `observer` as the upload reads them (see
    /// `UploadBodyObserver`).
    public func observed(by observer: any UploadBodyObserver) -> UploadBody {
        let make = makeSource
        let watch = ObservedReading(observer: observer)
        return UploadBody(length: length, contentType: contentType, repeatable: isRepeatable, name: name) {
            let source = try make()
            if watch.claimFirstSource() { return ObservedDataSource(upstream: source, watch: watch) }
            watch.lose("the upload made a second source of its body (a retry, a redirect, or parts read at offsets)")
            return source
        }
    }
}

/// The observation of one body: whether a source was made, and whether order was lost.
final class ObservedReading: Sendable {
    private struct State {
        var made = false
        var lost = false
    }

    let observer: any UploadBodyObserver
    private let state = Locked(State())

    init(observer: any UploadBodyObserver) { self.observer = observer }

    /// True for the first source made of the body, the one observed.
    func claimFirstSource() -> Bool {
        state.withLock { s in
            defer { s.made = true }
            return !s.made
        }
    }

    var isLost: Bool { state.withLock { s in s.lost } }

    func lose(_ why: String) {
        let first = state.withLock { s in
            defer { s.lost = true }
            return !s.lost
        }
        if first { observer.lostOrder(why) }
    }
}

/// A source that shows every byte read from its upstream to an observer.
final class ObservedDataSource: BlobDataSource {
    private let upstream: any BlobDataSource
    private let watch: ObservedReading

    init(upstream: any BlobDataSource, watch: ObservedReading) {
        self.upstream = upstream
        self.watch = watch
    }

    var state: BlobDataSourceState { upstream.state }
    var length: Int64? { upstream.length }
    var offsetCapability: BlobOffsetCapability { upstream.offsetCapability }
    var readOffset: Int64? { upstream.readOffset }
    var completionContext: BlobCompletionContext { upstream.completionContext }
    var verifiedPrefix: BlobVerifiedPrefix { upstream.verifiedPrefix }

    func seek(to offset: Int64) throws(BlobStreamError) {
        watch.lose("the upload moved its body to offset \(offset)")
        try upstream.seek(to: offset)
    }

    func open() { upstream.open() }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let n = upstream.read(buffer, maxLength: maxLength)
        if n > 0, !watch.isLost { watch.observer.observe(UnsafeRawBufferPointer(start: buffer, count: n)) }
        return n
    }

    func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>)
        -> Bool
    {
        guard upstream.getBuffer(buffer, length: length) else { return false }
        if !watch.isLost, let start = buffer.pointee {
            watch.observer.observe(UnsafeRawBufferPointer(start: start, count: length.pointee))
        }
        return true
    }

    func property(forKey key: Stream.PropertyKey) -> Any? { upstream.property(forKey: key) }

    func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        if key == .fileCurrentOffsetKey { watch.lose("the upload moved its body") }
        return upstream.setProperty(property, forKey: key)
    }

    func close() { upstream.close() }

    func interrupt() { upstream.interrupt() }
}
