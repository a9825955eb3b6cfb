import Foundation
import Testing

/// The upload body producers allocate nothing per chunk in steady state: the probe
/// (`blobstream-upload-alloc-probe`, with malloc-interposer preloaded) counts the mallocs of
/// `BodyPump` (AsyncHTTPClient) and `URLSessionBodyStream` streaming N and 4N chunks into
/// stand-ins for their clients, in a process of its own (the interposer counts every
/// thread of a process, and tests run in parallel here).
@Suite("Upload chunk path: no allocation per chunk")
struct UploadAllocationTests {
    /// The folder of the built products (where the test runner itself lives).
    static let binDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()

    @Test("BodyPump and URLSessionBodyStream add no malloc per chunk to their stream's (N and 4N chunks)")
    func mallocsDoNotGrowWithChunks() throws {
        let process = Process()
        process.executableURL = Self.binDirectory.appendingPathComponent("blobstream-upload-alloc-probe")
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = Self.binDirectory.appendingPathComponent("libMallocInterposerSwift.so").path
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let output = String(decoding: data, as: UTF8.self)
        // Under ThreadSanitizer (`make tsan`) its allocator takes malloc before the
        // interposer: the probe then runs the producers (their races are checked) but
        // cannot count; `make test` always counts.
        if output.hasPrefix("uncounted: ThreadSanitizer") { return }
        // "<producer> <chunks> <mallocs>" lines.
        var counts: [String: [Int: Int]] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let chunks = Int(fields[1]), let mallocs = Int(fields[2]) else { continue }
            counts[String(fields[0]), default: [:]][chunks] = mallocs
        }
        func growth(_ producer: String) -> Int? {
            guard let few = counts[producer]?[64], let many = counts[producer]?[256] else {
                Issue.record("no counts for \(producer): \(String(decoding: data, as: UTF8.self))")
                return nil
            }
            return many - few
        }
        guard let stream = growth("stream") else { return }
        // The producers add no allocation per chunk to those of the stream they read
        // (192 more chunks: one per chunk would add 192).
        for producer in ["pump", "urlsession"] {
            guard let grown = growth(producer) else { continue }
            #expect(
                grown - stream <= 4,
                "\(producer): \(grown) more mallocs for 192 more chunks, the stream alone \(stream)")
        }
        // Nor does the stream they read: BlobInputStream's synchronous read allocates
        // nothing per read (StreamCore queues its events without allocating).
        #expect(stream <= 4, "BlobInputStream alone: \(stream) more mallocs for 192 more chunks")
    }
}
