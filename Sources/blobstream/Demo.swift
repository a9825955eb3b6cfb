import ArgumentParser
import BlobStream
import Crypto
import Foundation

/// `blobstream demo`: streams the bundled sample files through `BlobInputStream` in both
/// modes and prints, for each, the bytes, the SHA-256 and the events delivered.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream the bundled samples through BlobInputStream in both modes and report.")

    @Option(help: "The fixtures folder of the BlobStream repository.")
    var fixtures = "Fixtures"

    func run() throws {
        let registry = makeRegistry()
        let samples = try sampleSources()
        try Console.print("BlobStream demo: \(samples.count) sources from \(fixtures), each read in both modes\n\n")
        try Console.print("source\tmode\tbytes\tsha256\tevents\n")
        var failed = false
        for sample in samples {
            for mode in [BlobInputStream.Mode.synchronous, .asynchronous] {
                let result = Self.stream(sourceURL(sample, registry: registry), registry: registry, mode: mode)
                let modeName = mode == .synchronous ? "sync" : "async"
                switch result {
                case .success(let r):
                    try Console.print("\(sample)\t\(modeName)\t\(r.bytes)\t\(r.sha256)\t\(Self.summarize(r.events))\n")
                case .failure(let error):
                    failed = true
                    Console.error(failure(sample, error).message)
                }
            }
        }
        if failed { throw ToolFailure(message: "the demo failed", alreadyReported: false) }
        try Console.print("\nBoth modes delivered the same bytes for every source.\n")
    }

    /// The sample sources: every file under `fixtures/files`, and the gzip samples through
    /// the `gzip:` scheme when that module is linked.
    func sampleSources() throws -> [String] {
        let folder = fixtures + "/files"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder), !names.isEmpty else {
            throw ToolFailure(message: "no samples in '\(folder)': run the demo from the repository's root or pass --fixtures")
        }
        return names.sorted().map { "\(folder)/\($0)" }
    }

    struct Outcome {
        var bytes = 0
        var sha256 = ""
        var events: [String] = []
    }

    /// Reads one URL to its end in `mode`. Asynchronous mode runs on a thread of its own
    /// with a run loop, reading on each hasBytesAvailable event.
    static func stream(_ url: String, registry: DataSourceRegistry, mode: BlobInputStream.Mode) -> Result<Outcome, any Error> {
        let box = OutcomeBox()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            box.result = Result { try readAll(url, registry: registry, mode: mode) }
            done.signal()
        }
        thread.start()
        guard done.wait(timeout: .now() + 120) == .success else {
            return .failure(ToolFailure(message: "\(url): no end after 120 s"))
        }
        return box.result!
    }

    private static func readAll(_ url: String, registry: DataSourceRegistry, mode: BlobInputStream.Mode) throws -> Outcome {
        let stream = try BlobInputStream(url: url, registry: registry, mode: mode)
        var outcome = Outcome()
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        func drainOnce() -> Int {
            let n = stream.read(&buffer, maxLength: buffer.count)
            if n > 0 {
                outcome.bytes += n
                buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            }
            return n
        }
        let subscription = stream.addEventHandler(for: [.openCompleted, .hasBytesAvailable, .endEncountered, .errorOccurred]) { s, event in
            outcome.events.append(eventName(event))
            if mode == .asynchronous, event == .hasBytesAvailable { _ = drainOnce() }
        }
        stream.schedule(in: .current, forMode: .default)
        stream.open()
        if mode == .synchronous {
            while drainOnce() > 0 {}
        }
        let deadline = Date(timeIntervalSinceNow: 60)
        while !(outcome.events.last == "end" || outcome.events.last == "error"), Date() < deadline {
            _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
        }
        stream.close()
        subscription.invalidate()
        if let error = stream.streamError { throw error }
        guard outcome.events.last == "end" else { throw ToolFailure(message: "\(url): no endEncountered event") }
        outcome.sha256 = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        return outcome
    }

    static func eventName(_ event: Stream.Event) -> String {
        switch event {
        case .openCompleted: "open"
        case .hasBytesAvailable: "bytes"
        case .endEncountered: "end"
        case .errorOccurred: "error"
        default: "other"
        }
    }

    /// `open, bytes×3, end` for a list of event names.
    static func summarize(_ events: [String]) -> String {
        var parts: [String] = []
        var i = 0
        while i < events.count {
            var j = i
            while j < events.count, events[j] == events[i] { j += 1 }
            parts.append(j - i > 1 ? "\(events[i])×\(j - i)" : events[i])
            i = j
        }
        return parts.joined(separator: ", ")
    }
}

/// Carries a result from the demo's reading thread (written before the semaphore is
/// signalled, read after it is waited for).
private final class OutcomeBox: @unchecked Sendable {
    var result: Result<Demo.Outcome, any Error>?
}
