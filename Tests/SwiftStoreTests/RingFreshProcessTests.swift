import Crypto
import Foundation
import Glibc
import SwiftStoreTestServer
import Testing

/// The built `blobstream`, run as a user runs it: a fresh process that has measured nothing of
/// the store, so that its first GETs hedge from no statistics of their own. In the suite of
/// `RingFailoverTests` (one test at a time: they stop the same nodes).
enum RingTool {
    /// The tool beside the test runner (`swift build` builds every product), or the one
    /// `BLOBSTREAM_RING_TOOL` names (to measure another build).
    static let binary =
        ProcessInfo.processInfo.environment["BLOBSTREAM_RING_TOOL"]
        ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("blobstream").path

    /// What one run brought: its exit status, stderr, the sha256 and count of its stdout, and
    /// the seconds from its start to its exit.
    struct Run: Sendable {
        var status: Int32
        var stderr: String
        var digest: String
        var bytes: Int
        var seconds: Double
    }

    /// The environment of a run against `endpoint` with the store's S3 credentials: no
    /// profile or cache of the machine's user (HOME and XDG_CACHE_HOME in `home`).
    static func environment(_ store: SwiftStoreTestServer, endpoint: String? = nil, home: URL) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in [
            "AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN",
            "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "BLOBSTREAM_INDEX_CACHE",
        ] {
            environment[name] = nil
        }
        environment["HOME"] = home.path
        environment["XDG_CACHE_HOME"] = home.appendingPathComponent("cache").path
        environment["AWS_ENDPOINT_URL"] = endpoint ?? store.endpoint
        environment["AWS_REGION"] = store.region
        environment["AWS_ACCESS_KEY_ID"] = store.accessKey
        environment["AWS_SECRET_ACCESS_KEY"] = store.secretKey
        return environment
    }

    /// Runs `blobstream ARGS` to its end on a thread of its own (a read over a failing ring
    /// takes seconds: the cooperative threads stay free); stdout is hashed as it comes.
    static func run(_ arguments: [String], environment: [String: String]) async throws -> Run {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try runBlocking(arguments, environment: environment) })
            }.start()
        }
    }

    private static func runBlocking(_ arguments: [String], environment: [String: String]) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let errText = ErrorText()
        let errDone = DispatchSemaphore(value: 0)
        let started = ContinuousClock.now
        try process.run()
        Thread {
            errText.set(err.fileHandleForReading.readDataToEndOfFile())
            errDone.signal()
        }.start()
        var hash = SHA256()
        var bytes = 0
        while true {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            hash.update(data: chunk)
            bytes += chunk.count
        }
        process.waitUntilExit()
        let elapsed = ContinuousClock.now - started
        errDone.wait()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Run(
            status: process.terminationStatus, stderr: errText.text,
            digest: hash.finalize().map { String(format: "%02x", $0) }.joined(), bytes: bytes, seconds: seconds)
    }

    /// The median of `values` (the upper one of an even count).
    static func median(_ values: [Double]) -> Double {
        values.sorted()[values.count / 2]
    }
}

/// Carries stderr's bytes from the reading thread. Unchecked Sendable: guarded by `lock`.
private final class ErrorText: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ data: Data) { lock.withLock { self.data = data } }
    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
}

extension RingFailoverTests {
    /// A folder of the test's own for the tool's HOME; removed by the caller. Fails the
    /// test when the tool is not built (`swift build` builds every product).
    func toolHome() throws -> URL {
        try #require(
            FileManager.default.isExecutableFile(atPath: RingTool.binary),
            "no \(RingTool.binary): build the products first (swift build)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ring-tool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// The proxy skips a node that failed within its error suppression interval (2 s): a
    /// read after that may meet the stopped node again. Time must pass for the proxy to
    /// forget the failures of the reads before (their node timeouts end up to 2 s after the
    /// read did), so that each read meets the ring as a user's first read would.
    func forgetFailures(_ seconds: Double) async throws {
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
    }

    /// The proxy's log lines of this test's bucket for requests that started at or after
    /// `since` (seconds since 1970), each as "start+seconds METHOD path status": what a slow
    /// read met, for its failure message.
    func proxyRequests(since: Double) -> String {
        let log = store.folder.appendingPathComponent("store/log/swift.log")
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.contains("proxy-server: ") && $0.contains("/\(bucket)/") }
            .compactMap { line -> String? in
                let fields = line.split(separator: " ")
                guard fields.count > 8, let start = Double(fields[fields.count - 3]), start >= since,
                    let end = Double(fields[fields.count - 2])
                else { return nil }
                return String(
                    format: "+%.3f %.3fs %@ %@ %@", start - since, end - start, String(fields[4]),
                    String(fields[5]), String(fields[7]))
            }.joined(separator: "\n")
    }

    /// A tar.gz of three members (one of 300 000 bytes) and its member index beside it
    /// (`blobstream index`, with every node running); the member's bytes.
    func indexedTarGz(_ key: String, environment: [String: String]) async throws -> Data {
        let folder = try toolHome()
        defer { try? FileManager.default.removeItem(at: folder) }
        let member = patternBytes(300_000, seed: 51)
        try patternBytes(200_000, seed: 52).write(to: folder.appendingPathComponent("a.bin"))
        try member.write(to: folder.appendingPathComponent("m.bin"))
        try patternBytes(200_000, seed: 53).write(to: folder.appendingPathComponent("z.bin"))
        let tar = Process()
        tar.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        tar.arguments = ["tar", "-czf", "t.tar.gz", "-C", folder.path, "a.bin", "m.bin", "z.bin"]
        tar.currentDirectoryURL = folder
        try tar.run()
        tar.waitUntilExit()
        try #require(tar.terminationStatus == 0)
        try await store.swiftAPI.put(bucket, key, try Data(contentsOf: folder.appendingPathComponent("t.tar.gz")))
        let index = try await RingTool.run(["index", "s3://\(bucket)/\(key)"], environment: environment)
        try #require(index.status == 0, "\(index.stderr)")
        return member
    }

    @Test(
        "blobstream cat of a member through its index, a fresh process each time, one object server stopped (SIGSTOP): within a second"
    )
    func toolMemberReadWithNodeStopped() async throws {
        let home = try toolHome()
        defer { try? FileManager.default.removeItem(at: home) }
        let environment = RingTool.environment(store, home: home)
        let member = try await indexedTarGz("t.tar.gz", environment: environment)
        let source = "archive:s3://\(bucket)/t.tar.gz!/m.bin"
        var healthy: [Double] = []
        for _ in 0..<3 {
            let read = try await RingTool.run(["cat", source], environment: environment)
            #expect(read.status == 0 && read.digest == sha256(member), "\(read.stderr)")
            healthy.append(read.seconds)
        }
        let healthyMedian = RingTool.median(healthy)
        let stopped = try await withNodesRestored {
            let victim = try #require(store.objectServers.first)
            store.signal(SIGSTOP, [victim])
            var seconds: [Double] = []
            var slowRounds: [String] = []
            for round in 0..<5 {
                try await forgetFailures(2.5)
                let started = Date().timeIntervalSince1970
                let read = try await RingTool.run(["cat", source], environment: environment)
                #expect(read.status == 0, "round \(round): \(read.stderr)")
                #expect(read.digest == sha256(member), "round \(round)")
                seconds.append(read.seconds)
                // 1.5 s, or what a slower tool (ThreadSanitizer's build) takes healthy, and 1.5 s.
                if read.seconds > max(1.5, healthyMedian + 1.5) {
                    try await Task.sleep(for: .seconds(2.5)) // the node timeouts end, and are logged
                    slowRounds.append(
                        "round \(round): \(read.seconds) s; the proxy's log:\n\(proxyRequests(since: started))")
                }
            }
            // The proxy picks a node for each GET at random; now and then a GET and its four
            // hedges all meet the stopped node first (seen in 1 of 12 rounds of the
            // ThreadSanitizer build: five GETs of the index, each answered after the 2 s node
            // timeout), and that round waits one node timeout. One such round of five is
            // allowed, no more, and no round waits two.
            #expect(slowRounds.count <= 1, "\(slowRounds.joined(separator: "\n"))")
            if slowRounds.count == 1 { print("ring tool: one slow round allowed: \(slowRounds[0])") }
            return seconds
        }
        print(
            String(
                format: "ring tool figures: member read, no fault: median %.3f s; one node stopped: median %.3f s, "
                    + "slowest %.3f s (%@)",
                RingTool.median(healthy), RingTool.median(stopped), stopped.max() ?? 0,
                stopped.map { String(format: "%.2f", $0) }.joined(separator: " ")))
        // The proxy's node timeout is 2 s: a read that waited it out once takes more than 2 s
        // beyond its healthy time. Within a second is the aim; 1.5 s leaves room for a loaded
        // machine; a slower tool (ThreadSanitizer's build) is allowed what its healthy reads take.
        let base = RingTool.median(healthy)
        #expect(RingTool.median(stopped) <= max(1, base + 0.75), "no fault \(healthy), one node stopped \(stopped)")
        #expect(
            stopped.allSatisfy { $0 <= max(1.5, base + 1.5) + 2 }, "no fault \(healthy), one node stopped \(stopped)")
    }

    @Test(
        "blobstream cat of a large object, a fresh process each time, one object server stopped (SIGSTOP): at most twice the time with no fault"
    )
    func toolDownloadWithNodeStopped() async throws {
        // 128 MiB by default (BLOBSTREAM_RING_TOOL_MIB=256 for the figures): a smaller
        // download is over so soon that the first GET's hedge delay (250 ms when it meets
        // the stopped node) alone makes half its time.
        let mebibytes = Int(ProcessInfo.processInfo.environment["BLOBSTREAM_RING_TOOL_MIB"] ?? "") ?? 128
        let home = try toolHome()
        defer { try? FileManager.default.removeItem(at: home) }
        let environment = RingTool.environment(store, home: home)
        let body = patternBytes(mebibytes << 20, seed: 54)
        try await store.swiftAPI.put(bucket, "big.bin", body)
        let digest = sha256(body)
        let source = "s3://\(bucket)/big.bin"
        var healthy: [Double] = []
        for _ in 0..<3 {
            let read = try await RingTool.run(["cat", source], environment: environment)
            #expect(read.status == 0 && read.digest == digest, "\(read.stderr)")
            healthy.append(read.seconds)
        }
        let stopped = try await withNodesRestored {
            let victim = try #require(store.objectServers.first)
            store.signal(SIGSTOP, [victim])
            var seconds: [Double] = []
            for round in 0..<5 {
                try await forgetFailures(4.5)
                let read = try await RingTool.run(["cat", source], environment: environment)
                #expect(read.status == 0, "round \(round): \(read.stderr)")
                #expect(read.bytes == body.count && read.digest == digest, "round \(round)")
                seconds.append(read.seconds)
            }
            return seconds
        }
        let ratio = RingTool.median(stopped) / RingTool.median(healthy)
        print(
            String(
                format: "ring tool figures: %d MiB download, no fault: median %.2f s (%@); one node stopped: median "
                    + "%.2f s (%@); %.2fx",
                mebibytes, RingTool.median(healthy), healthy.map { String(format: "%.2f", $0) }.joined(separator: " "),
                RingTool.median(stopped), stopped.map { String(format: "%.2f", $0) }.joined(separator: " "), ratio))
        // The aim is at most twice the healthy time (the printed ratio, which the README
        // quotes). What this asserts is what a hung node must never cost again: a median run
        // that waits out the node timeout (2 s) beyond twice its healthy time (5.2x before
        // hedging began at a process's first request). On a loaded 2-core machine, one run in
        // three still waits out one node timeout (two blocks read ahead
        // served whole by GETs that met the stopped node, although hedges were sent: not yet
        // understood): ratios of 1.2-1.75x on a quiet machine, 2.7x once under load.
        #expect(
            RingTool.median(stopped) <= 2 * RingTool.median(healthy) + 2,
            "no fault \(healthy), one node stopped \(stopped), \(ratio)x")
    }

    @Test(
        "a healthy ring 20 or 80 ms away (a delay per request): a fresh process's member read and small read send no hedge",
        arguments: [0.02, 0.08])
    func toolSendsNoHedgeToADistantHealthyStore(delay: Double) async throws {
        let home = try toolHome()
        defer { try? FileManager.default.removeItem(at: home) }
        let member = try await indexedTarGz("t.tar.gz", environment: RingTool.environment(store, home: home))
        try await store.swiftAPI.put(bucket, "small.bin", patternBytes(100_000, seed: 55))
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let environment = RingTool.environment(store, endpoint: proxy.endpoint, home: home)
        let reads = [
            (["cat", "archive:s3://\(bucket)/t.tar.gz!/m.bin"], sha256(member)),
            (["cat", "s3://\(bucket)/small.bin"], sha256(patternBytes(100_000, seed: 55))),
        ]
        // The requests of each read, as "METHOD target range", sorted.
        func requests(delayed: Bool) async throws -> [[String]] {
            var seen: [[String]] = []
            for (arguments, digest) in reads {
                try await proxy.setRules(delayed ? [.delay(delay, times: 0)] : [])
                try await proxy.clearLog()
                let read = try await RingTool.run(arguments, environment: environment)
                #expect(read.status == 0 && read.digest == digest, "\(arguments): \(read.stderr)")
                seen.append(
                    await proxy.settledLog().map { "\($0.method) \($0.target) \($0.headers["range"] ?? "-")" }.sorted())
            }
            return seen
        }
        let plain = try await requests(delayed: false)
        let delayed = try await requests(delayed: true)
        print("ring tool figures: \(Int(delay * 1000)) ms per request: requests \(delayed.map(\.count))")
        #expect(delayed == plain, "a hedge was sent")
        for requests in delayed {
            // A hedge asks again from the offset of the GET it doubles: "GET /b/k bytes=0-"
            // and "GET /b/k bytes=0-2097151" start alike.
            let starts = requests.map { request -> String in
                guard let range = request.range(of: " bytes=") else { return request }
                return String(request[..<range.upperBound] + request[range.upperBound...].prefix { $0 != "-" })
            }
            #expect(Set(starts).count == starts.count, "\(requests)")
        }
    }
}
