import ArgumentParser
import AsyncHTTPClient
import BlobStream
import BlobStreamAssets
import BlobStreamCLI
import BlobStreamHTTPClient
import Crypto
import Foundation

/// `blobstream demo`: streams the bundled sample files through `BlobInputStream` in both
/// modes and prints, for each, the bytes, the SHA-256 and the events delivered.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Stream the bundled samples through BlobInputStream in both modes and report.")

    @Option(help: "The fixtures folder of the BlobStream repository.")
    var fixtures = "Fixtures"

    @Option(
        help:
            "Also upload every sample under this http:// URL (a WebDAV folder), read each copy back and compare SHA-256."
    )
    var uploadTo: String?

    func run() throws {
        let registry = makeRegistry(library: fixtures + "/library", remote: RunConnections(caBundle: nil).remote())
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
        if let uploadTo { try upload(samples, to: uploadTo, registry: registry) }
    }

    /// Uploads each sample with AsyncHTTPClient, reads the server's copy back, and compares.
    func upload(_ samples: [String], to base: String, registry: DataSourceRegistry) throws {
        try Console.print("\nUploads to \(base) (AsyncHTTPClient, streamed):\n")
        try Console.print("source\tbytes\tsha256 sent\tserver copy\n")
        let report = UploadReport()
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                for (i, sample) in samples.enumerated() {
                    let url = sourceURL(sample, registry: registry)
                    let target = base.hasSuffix("/") ? base + "sample-\(i)" : base + "/sample-\(i)"
                    let body = try UploadBody.probingLength { try registry.makeSource(url: url) }
                    _ = try await HTTPClientUploader().upload(body, to: target).result
                    let sent = try Self.sha256(of: url, registry: registry)
                    var request = HTTPClientRequest(url: target)
                    request.method = .GET
                    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                    var copy = try await response.body.collect(upTo: 64 << 20)
                    let bytes = copy.readBytes(length: copy.readableBytes) ?? []
                    let stored = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
                    report.add(
                        "\(sample)\t\(bytes.count)\t\(sent.hex)\t\(stored == sent.hex ? "identical" : "DIFFERENT: \(stored)")",
                        ok: stored == sent.hex)
                }
            } catch {
                report.fail(error)
            }
            done.signal()
        }
        done.wait()
        for line in report.lines { try Console.print(line + "\n") }
        if let error = report.error { throw ToolFailure(message: "the demo's upload failed: \(error)") }
        guard report.allIdentical else { throw ToolFailure(message: "a server copy differs from its source") }
        try Console.print("\nThe server holds byte-identical copies of all \(report.lines.count) samples.\n")
    }

    static func sha256(of url: String, registry: DataSourceRegistry) throws -> (hex: String, bytes: Int) {
        let stream = try BlobInputStream(url: url, registry: registry)
        stream.open()
        defer { stream.close() }
        var hasher = SHA256()
        var count = 0
        try pump(stream, name: url) {
            hasher.update(bufferPointer: $0)
            count += $0.count
        }
        return (hasher.finalize().map { String(format: "%02x", $0) }.joined(), count)
    }

    /// The sample sources: every file under `fixtures/files`, a gzip file, archive members
    /// (plain path syntax and URL syntax), and the photo library's assets.
    func sampleSources() throws -> [String] {
        let folder = fixtures + "/files"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder), !names.isEmpty else {
            throw ToolFailure(
                message: "no samples in '\(folder)': run the demo from the repository's root or pass --fixtures")
        }
        let absolute = fixtures.hasPrefix("/") ? fixtures : FileManager.default.currentDirectoryPath + "/" + fixtures
        var samples = names.sorted().map { "\(folder)/\($0)" }
        samples.append("gzip:" + BlobURL.fileURL(path: absolute + "/archives/sample.txt.gz"))
        samples.append(fixtures + "/archives/photos.tar!/DCIM/100TEST/IMG_0002.JPG")
        samples.append(
            "archive:gzip:" + BlobURL.fileURL(path: absolute + "/archives/photos.tar.gz")
                + "!/DCIM/100TEST/IMG_0001.JPG")
        let library = DirectoryAssetLibrary(root: URL(fileURLWithPath: fixtures + "/library"))
        samples += try library.assets().map(\.url)
        return samples
    }

    struct Outcome {
        var bytes = 0
        var sha256 = ""
        var events: [String] = []
    }

    /// Reads one URL to its end in `mode`. Asynchronous mode runs on a thread of its own
    /// with a run loop, reading on each hasBytesAvailable event.
    static func stream(_ url: String, registry: DataSourceRegistry, mode: BlobInputStream.Mode) -> Result<
        Outcome, any Error
    > {
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

    private static func readAll(_ url: String, registry: DataSourceRegistry, mode: BlobInputStream.Mode) throws
        -> Outcome
    {
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
        let subscription = stream.addEventHandler(for: [
            .openCompleted, .hasBytesAvailable, .endEncountered, .errorOccurred,
        ]) { s, event in
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

/// The demo's upload lines, gathered on the upload task.
private final class UploadReport: Sendable {
    private struct State {
        var lines: [String] = []
        var error: (any Error)?
        var allIdentical = true
    }
    private let state = Locked(State())
    var lines: [String] { state.withLock { s in s.lines } }
    var error: (any Error)? { state.withLock { s in s.error } }
    var allIdentical: Bool { state.withLock { s in s.allIdentical } }
    func add(_ line: String, ok: Bool) {
        state.withLock { s in
            s.lines.append(line)
            s.allIdentical = s.allIdentical && ok
        }
    }
    func fail(_ error: any Error) { state.withLock { s in s.error = error } }
}
