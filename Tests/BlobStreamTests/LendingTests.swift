import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

/// An in-memory source that counts `getBuffer` calls and answers them in one of three ways.
private final class LendingProbe: BlobDataSource, @unchecked Sendable {
    enum Answer { case never, notNow, lends }
    let state = BlobDataSourceState()
    let data: Data
    let answer: Answer
    private(set) var asked = 0
    private var position = 0
    private let chunk = 10_000
    private let lent = UnsafeMutablePointer<UInt8>.allocate(capacity: 10_000)

    init(_ data: Data, _ answer: Answer) {
        self.data = data
        self.answer = answer
    }

    deinit { lent.deallocate() }

    func open() {
        state.isOpenCompleted = true
        if data.isEmpty { state.isAtEnd = true } else { state.hasBytesAvailable = true }
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let n = min(maxLength, chunk, data.count - position)
        if n == 0 {
            state.isAtEnd = true
            return 0
        }
        data.copyBytes(to: buffer, from: position..<position + n)
        position += n
        return n
    }

    func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>)
        -> Bool
    {
        asked += 1
        switch answer {
        case .never: return BlobLending.never(length)
        case .notNow: return false
        case .lends:
            let n = min(chunk, data.count - position)
            guard n > 0 else { return false }
            data.copyBytes(to: lent, from: position..<position + n)
            position += n
            buffer.pointee = lent
            length.pointee = n
            return true
        }
    }

    func close() {}
}

@Suite("getBuffer: a source that never lends is asked once")
struct LendingTests {
    static let bytes = sampleBytes(250_000, seed: 0x1E4D)

    /// Reads like `blobstream cat`: getBuffer first, `read` when nothing is lent.
    static func pump(_ stream: BlobInputStream) -> Data {
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: 8_192)
        var pointer: UnsafeMutablePointer<UInt8>?
        var count = 0
        while true {
            if stream.getBuffer(&pointer, length: &count), let pointer {
                out.append(pointer, count: count)
                continue
            }
            let n = stream.read(&buffer, maxLength: buffer.count)
            if n <= 0 { return out }
            out.append(buffer, count: n)
        }
    }

    @Test("never: asked once for the whole read; the bytes are all there")
    func never() {
        let source = LendingProbe(Self.bytes, .never)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        #expect(Self.pump(stream) == Self.bytes)
        #expect(source.asked == 1)
    }

    @Test("the default getBuffer says never too: an in-memory source is read with reads only")
    func defaultNever() {
        let stream = BlobInputStream(dataSource: InMemoryDataSource(data: Self.bytes, chunkSize: 1_000))
        stream.open()
        var pointer: UnsafeMutablePointer<UInt8>?
        var count = 7
        #expect(!stream.getBuffer(&pointer, length: &count))
        #expect(count == 0, "the mark does not leak to the stream's caller")
        #expect(Self.pump(stream) == Self.bytes)
    }

    @Test("not now: asked again on every chunk")
    func notNow() {
        let source = LendingProbe(Self.bytes, .notNow)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        #expect(Self.pump(stream) == Self.bytes)
        #expect(source.asked >= 25, "asked \(source.asked) times for 26 chunks")
    }

    @Test("a lending source lends every chunk")
    func lends() {
        let source = LendingProbe(Self.bytes, .lends)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        #expect(Self.pump(stream) == Self.bytes)
        #expect(source.asked == 26, "25 chunks lent, then one false at the end")
    }
}
