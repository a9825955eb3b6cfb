import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

/// A source written for the original's untyped key only (`property` / `setProperty`).
private final class KeyOnlySource: BlobDataSource, @unchecked Sendable {
    let state = BlobDataSourceState()
    var position: Int64 = 7
    var offsetCapability: BlobOffsetCapability { .seek }
    func open() { state.isOpenCompleted = true }
    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int { 0 }
    func close() {}
    func property(forKey key: Stream.PropertyKey) -> Any? {
        key == .fileCurrentOffsetKey ? NSNumber(value: position) : nil
    }
    func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        guard key == .fileCurrentOffsetKey, let offset = BlobOffset.value(from: property), offset <= 100 else {
            return false
        }
        position = offset
        return true
    }
}

/// A source written for the typed API only (`readOffset` / `seek(to:)`).
private final class TypedOnlySource: BlobDataSource, @unchecked Sendable {
    let state = BlobDataSourceState()
    var position: Int64 = 9
    var offsetCapability: BlobOffsetCapability { .seek }
    func open() { state.isOpenCompleted = true }
    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int { 0 }
    func close() {}
    var readOffset: Int64? { position }
    func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset <= 100 else { throw BlobStreamError(.invalidOffset, "past 100") }
        position = offset
    }
}

/// A source that implements neither form.
private final class NoOffsetSource: BlobDataSource, @unchecked Sendable {
    let state = BlobDataSourceState()
    let capability: BlobOffsetCapability
    init(_ capability: BlobOffsetCapability) { self.capability = capability }
    var offsetCapability: BlobOffsetCapability { capability }
    func open() { state.isOpenCompleted = true }
    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int { 0 }
    func close() {}
}

/// A source whose typed offset forgets what the key says: the conformance check must see it.
private final class DisagreeingSource: BlobDataSource, @unchecked Sendable {
    let inner: InMemoryDataSource
    init(_ data: Data) { inner = InMemoryDataSource(data: data) }
    var state: BlobDataSourceState { inner.state }
    var length: Int64? { inner.length }
    var offsetCapability: BlobOffsetCapability { .seek }
    func open() { inner.open() }
    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int { inner.read(buffer, maxLength: maxLength) }
    func close() { inner.close() }
    func property(forKey key: Stream.PropertyKey) -> Any? { inner.property(forKey: key) }
    func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        inner.setProperty(property, forKey: key)
    }
    var readOffset: Int64? { 0 }
}

@Suite("The typed offset API and its bridge to .fileCurrentOffsetKey")
struct OffsetAPITests {
    @Test("a source with the key only gets readOffset and seek(to:) from it")
    func keyOnly() throws {
        let source = KeyOnlySource()
        #expect(source.readOffset == 7)
        try source.seek(to: 42)
        #expect(source.position == 42 && source.readOffset == 42)
        #expect(throws: BlobStreamError.self) { try source.seek(to: 101) }
        #expect(source.position == 42, "a refused move changes nothing")
    }

    @Test("a source with the typed API only answers the key through it")
    func typedOnly() {
        let source = TypedOnlySource()
        #expect((source.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.int64Value == 9)
        #expect(source.setProperty(NSNumber(value: 33), forKey: .fileCurrentOffsetKey))
        #expect(source.position == 33)
        #expect(!source.setProperty(NSNumber(value: 101), forKey: .fileCurrentOffsetKey))
        #expect(!source.setProperty("12", forKey: .fileCurrentOffsetKey))
        #expect(source.property(forKey: .blobContentIdentityKey) == nil)
        #expect(source.position == 33)
    }

    @Test("a source with neither has no offset and refuses moves, without calling round in circles")
    func neither() {
        for capability in [BlobOffsetCapability.seek, .none] {
            let source = NoOffsetSource(capability)
            #expect(source.readOffset == nil)
            #expect(source.property(forKey: .fileCurrentOffsetKey) == nil)
            #expect(!source.setProperty(NSNumber(value: 1), forKey: .fileCurrentOffsetKey))
            do {
                try source.seek(to: 1)
                Issue.record("a move was accepted")
            } catch {
                #expect(error.code == (capability == .none ? .offsetUnsupported : .invalidOffset))
            }
        }
    }

    @Test("the stream uses the typed API of both kinds of source, and the key keeps working")
    func stream() throws {
        for source in [KeyOnlySource(), TypedOnlySource()] as [any BlobDataSource] {
            let stream = BlobInputStream(dataSource: source)
            try stream.seek(to: 20)
            #expect(stream.readOffset == 20)
            stream.open()
            #expect(source.readOffset == 20, "\(type(of: source)): the offset set before open")
            #expect((stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.intValue == 20)
            #expect(stream.setProperty(NSNumber(value: 30), forKey: .fileCurrentOffsetKey))
            #expect(source.readOffset == 30 && stream.readOffset == 30)
            do {
                try stream.seek(to: 101)
                Issue.record("\(type(of: source)): a refused offset was accepted")
            } catch {
                #expect(error.code == .invalidOffset)
            }
            #expect(stream.readOffset == 30)
            stream.close()
            #expect(throws: BlobStreamError.self) { try stream.seek(to: 1) }
        }
    }

    @Test("the stream's seek(to:) says why it refuses")
    func streamRefusals() {
        let none = BlobInputStream(dataSource: NoOffsetSource(.none))
        do {
            try none.seek(to: 1)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .offsetUnsupported)
        }
        let bytes = BlobInputStream(dataSource: InMemoryDataSource(data: sampleBytes(100)))
        do {
            try bytes.seek(to: 101)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .invalidOffset)
        }
        do {
            try bytes.seek(to: -1)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .invalidOffset)
        }
    }

    @Test("the conformance check finds a typed offset that disagrees with the key")
    func conformanceSeesDisagreement() {
        let bytes = sampleBytes(10_000)
        let findings = SourceConformance.check(expected: bytes) { DisagreeingSource(bytes) }
        #expect(findings.contains { $0.check == "typed-offset" }, "\(findings)")
        #expect(SourceConformance.check(expected: bytes) { InMemoryDataSource(data: bytes) }.isEmpty)
    }
}
