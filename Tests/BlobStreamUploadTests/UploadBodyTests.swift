import BlobStream
import BlobStreamTestSupport
import BlobStreamUpload
import Foundation
import Testing

/// Records what an `UploadBodyObserver` is shown.
private final class Recorder: UploadBodyObserver {
    private let state = Locked<(bytes: Data, lost: [String])>((Data(), []))
    func observe(_ bytes: UnsafeRawBufferPointer) { state.withLock { $0.bytes.append(contentsOf: bytes) } }
    func lostOrder(_ why: String) { state.withLock { $0.lost.append(why) } }
    var bytes: Data { state.withLock { $0.bytes } }
    var lost: [String] { state.withLock { $0.lost } }
}

/// `UploadBody`: a resumed body's offsets, and the observation hook uploads read through.
@Suite("UploadBody: starting(at:) and observed(by:)")
struct UploadBodyTests {
    @Test("starting(at:) past a known length is .invalidOffset; at 0 it is the same body; at the end, empty")
    func startingAt() throws {
        let bytes = sampleBytes(100)
        let body = UploadBody(length: 100) { DataBytesSource(bytes) }
        #expect {
            _ = try body.starting(at: 101)
        } throws: { error in
            (error as? BlobStreamError)?.code == .invalidOffset && "\(error)".contains("101")
        }
        #expect(try read(try body.starting(at: 0)).data == bytes)
        let end = try body.starting(at: 100)
        #expect(end.length == 0)
        #expect(try read(end).data.isEmpty)
    }

    @Test("the observer sees the first source's bytes in order, in any read size; the body reads the same")
    func observedInOrder() throws {
        let bytes = sampleBytes(200_000, seed: 3)
        let recorder = Recorder()
        let body = UploadBody(length: Int64(bytes.count), name: "b") { DataBytesSource(bytes) }.observed(by: recorder)
        #expect(body.length == 200_000 && body.name == "b" && body.isRepeatable)
        let (read, error) = try read(body, chunkSize: 1_001)
        #expect(error == nil && read == bytes)
        #expect(recorder.bytes == bytes)
        #expect(recorder.lost.isEmpty)
    }

    @Test("a second source of an observed body: lostOrder once, naming why; the second source is not observed")
    func secondSourceLosesOrder() throws {
        let bytes = sampleBytes(5_000, seed: 4)
        let recorder = Recorder()
        let body = UploadBody(length: Int64(bytes.count)) { DataBytesSource(bytes) }.observed(by: recorder)
        #expect(try read(body).data == bytes)
        #expect(try read(body).data == bytes)
        #expect(try read(body).data == bytes)
        #expect(recorder.bytes == bytes)
        #expect(recorder.lost.count == 1)
        #expect(recorder.lost.first?.contains("second source") == true, "\(recorder.lost)")
    }
}
