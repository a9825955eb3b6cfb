import BlobStream
import BlobStreamTestSupport
import Foundation

/// Deterministic pseudo-random bytes, so every run reads the same data.
func sampleBytes(_ count: Int, seed: UInt64 = 0x5EED) -> Data { TestData.pseudoRandom(count, seed: seed) }

/// A tiny FNV-1a digest, enough to compare byte streams in the core tests (the source
/// modules' tests use SHA-256 from swift-crypto; the core has no dependencies).
func digest(_ data: Data) -> UInt64 {
    data.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
}

/// Reads a stream to its end; returns the bytes and the last result (0 or −1).
func drain(_ stream: InputStream, size: Int) -> (Data, Int) { stream.readToEnd(chunkSize: size) }

struct SampleError: Error, Equatable, CustomStringConvertible {
    let tag: String
    var description: String { "sample failure \(tag)" }
}

/// Runs `body` on a fresh thread with its own run loop and waits for it (with a deadline
/// that only guards the test: a stuck thread is reported, not killed).
func onRunLoopThread(timeout: TimeInterval = 20, _ body: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        body()
        done.signal()
    }
    thread.start()
    return done.wait(timeout: .now() + timeout) == .success
}

typealias Box<T> = TestBox<T>
