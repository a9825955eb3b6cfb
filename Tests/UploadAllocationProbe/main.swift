// blobstream-upload-alloc-probe: counts the allocations (malloc-interposer) of the upload
// body producers alone while they stream N and 4N chunks, each into a stand-in for its
// client: `BodyPump` (AsyncHTTPClient) into a sink that takes each ByteBuffer and reports it
// written at once; `URLSessionBodyStream` read the way FoundationNetworking reads it
// (`hasBytesAvailable`, then `read`). Run with the interposer preloaded:
//
//     LD_PRELOAD=.build/debug/libMallocInterposerSwift.so .build/debug/blobstream-upload-alloc-probe
//
// It prints one line per producer and count: `<producer> <chunks> <mallocs>`. The whole
// body is in memory before counting starts; a warm-up run goes first, so that one-time
// allocations (type metadata, the allocator's own) do not count.
import BlobStream
import BlobStreamHTTPClient
import BlobStreamNetworking
import Foundation
import MallocInterposerSwift
import NIOCore

let chunkSize = 64 * 1024
let counts = [64, 256]

/// Progress goes somewhere, as a client's would, without allocating.
final class ProgressSink: @unchecked Sendable {
    var last = UploadProgress(sent: 0, total: nil, isFinished: false)
}

func countMallocs(_ work: () -> Void) -> Int {
    MallocInterposerSwift.reset()
    MallocInterposerSwift.hook()
    work()
    MallocInterposerSwift.unhook()
    return MallocInterposerSwift.getStatistics().mallocCount
}

/// `BodyPump.run` over `chunks` chunks into a sink that acknowledges each write at once.
func pump(_ bytes: Data, chunks: Int) -> Int {
    let sink = ProgressSink()
    let activity = UploadActivity()
    return countMallocs {
        let pump = BodyPump(
            source: .success(DataBytesSource(bytes)), mode: .synchronous, chunkSize: chunkSize,
            total: Int64(bytes.count), progress: { sink.last = $0 }, activity: activity)
        var received = 0
        let error = pump.run { buffer in
            received += buffer.readableBytes
            pump.acknowledge(buffer.readableBytes)
        }
        precondition(error == nil && received == bytes.count, "the pump did not deliver the body")
    }
}

/// `URLSessionBodyStream` read as FoundationNetworking reads it.
func urlSessionBody(_ bytes: Data, chunks: Int) -> Int {
    let sink = ProgressSink()
    let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: chunkSize)
    defer { buffer.deallocate() }
    return countMallocs {
        let stream = URLSessionBodyStream(dataSource: DataBytesSource(bytes)) { sink.last = $0 }
        stream.open()
        var received = 0
        while stream.hasBytesAvailable {
            let n = stream.read(buffer, maxLength: chunkSize)
            guard n > 0 else { break }
            received += n
        }
        precondition(received == bytes.count, "the body stream did not deliver the body")
    }
}

/// `BlobInputStream` alone (synchronous reads), and the source alone, for comparison.
func streamOnly(_ bytes: Data, chunks: Int) -> Int {
    let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: chunkSize)
    defer { buffer.deallocate() }
    return countMallocs {
        let stream = BlobInputStream(dataSource: DataBytesSource(bytes), mode: .synchronous)
        stream.open()
        while stream.read(buffer, maxLength: chunkSize) > 0 {}
        stream.close()
    }
}

func sourceOnly(_ bytes: Data, chunks: Int) -> Int {
    let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: chunkSize)
    defer { buffer.deallocate() }
    return countMallocs {
        let source = DataBytesSource(bytes)
        source.open()
        while source.read(buffer, maxLength: chunkSize) > 0 {}
        source.close()
    }
}

MallocInterposerSwift.initialize()
// The interposer is there only when preloaded: a count of 0 for a known allocation says so.
// Under ThreadSanitizer its runtime, linked into this executable, takes malloc first: the
// producers still run (and are checked for races), uncounted.
let check = countMallocs { UnsafeMutableRawPointer.allocate(byteCount: 100, alignment: 8).deallocate() }
let counting = check > 0
if !counting {
    guard dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil else {
        FileHandle.standardError.write(Data("the interposer is not loaded (LD_PRELOAD it)\n".utf8))
        exit(3)
    }
    print("uncounted: ThreadSanitizer's allocator")
}
for (name, producer) in [
    ("pump", pump), ("urlsession", urlSessionBody), ("stream", streamOnly), ("source", sourceOnly),
]
    as [(String, (Data, Int) -> Int)]
{
    _ = producer(Data(count: 8 * chunkSize), 8) // warm-up
    for chunks in counts {
        let bytes = Data(count: chunks * chunkSize)
        let mallocs = producer(bytes, chunks)
        if counting { print("\(name) \(chunks) \(mallocs)") }
    }
}
