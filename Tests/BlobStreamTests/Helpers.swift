import BlobStream
import BlobStreamTestSupport
import Foundation

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Deterministic pseudo-random bytes (a 64-bit LCG), so every run reads the same data.
func sampleBytes(_ count: Int, seed: UInt64 = 0x5EED) -> Data {
    var state = seed
    var bytes = [UInt8](repeating: 0, count: count)
    for i in 0..<count {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        bytes[i] = UInt8(truncatingIfNeeded: state >> 33)
    }
    return Data(bytes)
}

/// A tiny FNV-1a digest, enough to compare byte streams in the core tests (the source
/// modules' tests use SHA-256 from swift-crypto; the core has no dependencies).
func digest(_ data: Data) -> UInt64 {
    data.reduce(0xcbf29ce484222325) { ($0 ^ UInt64($1)) &* 0x100000001b3 }
}

/// Reads a stream to its end with reads of `size` bytes; returns the bytes and the last
/// result (0 for a clean end, −1 for an error).
func drain(_ stream: InputStream, size: Int) -> (Data, Int) {
    var out = Data()
    var buffer = [UInt8](repeating: 0, count: size)
    while true {
        let n = stream.read(&buffer, maxLength: size)
        if n <= 0 { return (out, n) }
        out.append(buffer, count: n)
    }
}

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

/// A mutable box for results produced on another thread (set before the semaphore is
/// signalled, read after it is waited for).
final class Box<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
