import BlobStream
import Foundation

/// Checks a data source against the contract of `BlobDataSource`: open, read to the end
/// (large and 1-byte reads), length, observation, offsets (`.fileCurrentOffsetKey` and the
/// typed `readOffset` / `seek(to:)`, which must agree), close, errors, and both stream
/// modes. Run it from any test framework: `check` returns the findings, `verify` throws them.
///
/// ```swift
/// let findings = SourceConformance.check(expected: bytes) { MySource(bytes) }
/// #expect(findings.isEmpty, "\(findings)")
/// ```
///
/// Each check runs on a thread of its own with a deadline, so a source that never announces
/// its state shows up as a finding instead of a hung test.
public enum SourceConformance {
    /// One way the source broke the contract.
    public struct Finding: CustomStringConvertible, Sendable, Equatable {
        /// The check that found it (`"read"`, `"offset"`, …).
        public let check: String
        /// What was wrong.
        public let message: String
        /// The check and what was wrong: `[check] message`.
        public var description: String { "[\(check)] \(message)" }
    }

    /// The findings of a failed `verify`.
    public struct Failure: Error, CustomStringConvertible {
        /// Every finding.
        public let findings: [Finding]
        /// Every finding, one per line.
        public var description: String {
            "data source breaks the contract:\n" + findings.map { "  \($0)" }.joined(separator: "\n")
        }
    }

    /// Runs every check and returns what was wrong (empty when nothing was).
    ///
    /// - Parameters:
    ///   - expected: the bytes a fresh source delivers from offset 0.
    ///   - timeout: how long one check may take.
    ///   - failing: optionally, makes a source that fails part-way; the check asserts that
    ///     the stream reports the error, with the source's error as its cause, and never a
    ///     clean end.
    ///   - makeSource: makes a fresh, unopened source each time it is called.
    public static func check(
        expected: Data, timeout: TimeInterval = 30,
        failing: (@Sendable () -> any BlobDataSource)? = nil,
        makeSource: @escaping @Sendable () -> any BlobDataSource
    ) -> [Finding] {
        var findings: [Finding] = []
        var checks: [(String, @Sendable (Recorder) -> Void)] = [
            ("open", { r in checkOpen(expected, makeSource, r) }),
            ("read", { r in checkRead(expected, makeSource, r) }),
            ("small-reads", { r in checkSmallReads(expected, makeSource, r) }),
            ("observation", { r in checkObservation(expected, makeSource, r) }),
            ("offset", { r in checkOffsets(expected, makeSource, r) }),
            ("typed-offset", { r in checkTypedOffsets(expected, makeSource, r) }),
            ("close", { r in checkClose(makeSource, r) }),
            ("async", { r in checkAsync(expected, makeSource, r) }),
        ]
        if let failing { checks.append(("error", { r in checkError(failing, r) })) }
        for (name, body) in checks {
            let recorder = Recorder(check: name)
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                body(recorder)
                done.signal()
            }
            thread.stackSize = 4 << 20
            thread.start()
            if done.wait(timeout: .now() + timeout) == .timedOut {
                recorder.add("did not finish within \(timeout) s: a state change that was never announced?")
            }
            findings += recorder.findings
        }
        return findings
    }

    /// Runs every check and throws `Failure` when anything was wrong.
    public static func verify(
        expected: Data, timeout: TimeInterval = 30,
        failing: (@Sendable () -> any BlobDataSource)? = nil,
        makeSource: @escaping @Sendable () -> any BlobDataSource
    ) throws {
        let findings = check(expected: expected, timeout: timeout, failing: failing, makeSource: makeSource)
        if !findings.isEmpty { throw Failure(findings: findings) }
    }

    // MARK: - The checks

    final class Recorder: Sendable {
        let check: String
        private let _findings = Locked<[Finding]>([])
        init(check: String) { self.check = check }
        var findings: [Finding] { _findings.withLock { $0 } }
        func add(_ message: String) { _findings.withLock { $0.append(Finding(check: check, message: message)) } }
        func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
            if !condition { add(message()) }
        }
    }

    /// Reads a stream to its end with reads of `size` bytes; nil bytes on −1.
    static func drain(_ stream: InputStream, size: Int, limit: Int = .max) -> (Data, Int) {
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: size)
        while out.count < limit {
            let n = stream.read(&buffer, maxLength: min(size, limit - out.count))
            if n <= 0 { return (out, n) }
            out.append(buffer, count: n)
        }
        return (out, 1)
    }

    static func describe(_ data: Data, against expected: Data) -> String {
        if data.count != expected.count { return "\(data.count) bytes instead of \(expected.count)" }
        let i = zip(data, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1
        return "bytes differ first at offset \(i)"
    }

    static func checkOpen(_ expected: Data, _ make: () -> any BlobDataSource, _ r: Recorder) {
        let source = make()
        r.expect(!source.isOpenCompleted, "isOpenCompleted is true before open()")
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        let status = stream.streamStatus
        r.expect(
            status == .open || (expected.isEmpty && status == .atEnd),
            "synchronous open left the stream in status \(status.rawValue), error: \(String(describing: stream.streamError))"
        )
        r.expect(source.isOpenCompleted, "isOpenCompleted is false after the open completed")
        r.expect(source.error == nil, "error after open: \(String(describing: source.error))")
        if let length = source.length {
            r.expect(length == Int64(expected.count), "length is \(length), the bytes are \(expected.count)")
        }
        if expected.isEmpty, source.length == 0 {
            r.expect(source.isAtEnd, "a source of known length 0 is not at its end after open")
        }
        stream.close()
    }

    static func checkRead(_ expected: Data, _ make: () -> any BlobDataSource, _ r: Recorder) {
        let source = make()
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        let (data, last) = drain(stream, size: 65_521)
        r.expect(last == 0, "reading ended with \(last) instead of 0; error: \(String(describing: stream.streamError))")
        r.expect(data == expected, "read: \(describe(data, against: expected))")
        r.expect(source.isAtEnd, "isAtEnd is false after the last byte was read")
        r.expect(!source.hasBytesAvailable, "hasBytesAvailable is true at the end")
        var byte: UInt8 = 0
        r.expect(stream.read(&byte, maxLength: 1) == 0, "a read after the end did not return 0")
        r.expect(stream.streamStatus == .atEnd, "status \(stream.streamStatus.rawValue) at the end")
        stream.close()
    }

    static func checkSmallReads(_ expected: Data, _ make: () -> any BlobDataSource, _ r: Recorder) {
        let stream = BlobInputStream(dataSource: make(), mode: .synchronous)
        stream.open()
        let head = min(expected.count, 3000)
        let (first, _) = drain(stream, size: 1, limit: head)
        let (rest, last) = drain(stream, size: 7919)
        r.expect(last == 0, "reading ended with \(last); error: \(String(describing: stream.streamError))")
        r.expect(
            first + rest == expected, "1-byte reads then large reads: \(describe(first + rest, against: expected))")
        stream.close()
    }

    static func checkObservation(_ expected: Data, _ make: () -> any BlobDataSource, _ r: Recorder) {
        let source = make()
        let seen = Recorder(check: "")
        let opened = source.observe(.isOpenCompleted, options: [.old, .new]) { change in
            seen.add("open \(change.oldValue.map(String.init) ?? "nil")->\(change.newValue.map(String.init) ?? "nil")")
        }
        let ended = source.observe(.isAtEnd, options: [.new]) { change in
            seen.add("end \(change.newValue.map(String.init) ?? "nil")")
        }
        let initial = source.observe(.isAtEnd, options: [.initial, .new]) { change in
            if change.isInitial { seen.add("initial \(change.newValue.map(String.init) ?? "nil")") }
        }
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        _ = drain(stream, size: 65_536)
        let notes = seen.findings.map(\.message)
        r.expect(
            notes.filter { $0 == "open false->true" }.count == 1,
            "isOpenCompleted observers saw \(notes.filter { $0.hasPrefix("open") }) instead of one false->true")
        r.expect(
            notes.filter { $0 == "end true" }.count == 1,
            "isAtEnd observers saw \(notes.filter { $0.hasPrefix("end") }) instead of one change to true")
        r.expect(notes.contains("initial false"), "an .initial observation did not get the current value at once")
        opened.invalidate()
        ended.invalidate()
        initial.invalidate()
        stream.close()
    }

    static func checkOffsets(_ expected: Data, _ make: () -> any BlobDataSource, _ r: Recorder) {
        let probe = make()
        guard probe.offsetCapability != .none else {
            let stream = BlobInputStream(dataSource: probe)
            r.expect(
                !stream.setProperty(NSNumber(value: 0), forKey: .fileCurrentOffsetKey),
                "offsetCapability is .none but an offset was accepted")
            return
        }
        for start in Set([0, expected.count / 2, max(expected.count - 1, 0), expected.count]) {
            let stream = BlobInputStream(dataSource: make())
            r.expect(
                stream.setProperty(NSNumber(value: start), forKey: .fileCurrentOffsetKey),
                "offset \(start) before open was refused")
            stream.open()
            let (data, last) = drain(stream, size: 65_536)
            r.expect(
                last == 0,
                "from offset \(start): reading ended with \(last); error: \(String(describing: stream.streamError))")
            r.expect(
                data == expected.subdata(in: start..<expected.count),
                "from offset \(start): \(describe(data, against: expected.subdata(in: start..<expected.count)))")
            stream.close()
        }
        // After open: read a little, then move (back for a seeking source, forward for one
        // that reads and discards, which may refuse to go back), read the rest.
        let stream = BlobInputStream(dataSource: make())
        stream.open()
        let head = min(100, expected.count)
        _ = drain(stream, size: 100, limit: head)
        let back = probe.offsetCapability == .seek ? expected.count / 3 : max(head, expected.count * 2 / 3)
        r.expect(
            stream.setProperty(NSNumber(value: back), forKey: .fileCurrentOffsetKey),
            "moving to offset \(back) after open was refused")
        let reported = (stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.intValue
        r.expect(reported == back, "the offset property reads \(String(describing: reported)) after moving to \(back)")
        let (data, _) = drain(stream, size: 65_536)
        r.expect(
            data == expected.subdata(in: back..<expected.count),
            "after moving to \(back): \(describe(data, against: expected.subdata(in: back..<expected.count)))")
        stream.close()
        let negative = BlobInputStream(dataSource: make())
        r.expect(!negative.setProperty(NSNumber(value: -1), forKey: .fileCurrentOffsetKey), "offset -1 was accepted")
    }

    /// `readOffset` and `seek(to:)` on the source itself, and their agreement with
    /// `.fileCurrentOffsetKey` (whichever pair the source implements, the other is bridged).
    static func checkTypedOffsets(_ expected: Data, _ make: () -> any BlobDataSource, _ r: Recorder) {
        func agree(_ source: any BlobDataSource, _ when: String) {
            let typed = source.readOffset
            let keyed = BlobOffset.value(from: source.property(forKey: .fileCurrentOffsetKey))
            r.expect(
                typed == keyed,
                "\(when): readOffset is \(String(describing: typed)) but .fileCurrentOffsetKey says \(String(describing: keyed))"
            )
        }
        let source = make()
        agree(source, "before open")
        do {
            try source.seek(to: -1)
            r.expect(false, "seek(to: -1) was accepted")
        } catch {
            r.expect(error.code == .invalidOffset, "seek(to: -1) threw \(error.code), not invalidOffset")
        }
        guard source.offsetCapability != .none else {
            do {
                try source.seek(to: 0)
                r.expect(false, "offsetCapability is .none but seek(to: 0) was accepted")
            } catch {}
            return
        }
        let middle = expected.count / 2
        do {
            try source.seek(to: Int64(middle))
        } catch {
            r.expect(false, "seek(to: \(middle)) before open threw \(error)")
            return
        }
        r.expect(
            source.readOffset == nil || source.readOffset == Int64(middle),
            "readOffset is \(String(describing: source.readOffset)) after seek(to: \(middle))")
        agree(source, "after seek(to: \(middle))")
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        let (data, last) = drain(stream, size: 65_536)
        r.expect(last == 0, "after seek(to: \(middle)): reading ended with \(last)")
        r.expect(
            data == expected.subdata(in: middle..<expected.count),
            "after seek(to: \(middle)): \(describe(data, against: expected.subdata(in: middle..<expected.count)))")
        r.expect(
            source.readOffset == nil || source.readOffset == Int64(expected.count),
            "readOffset is \(String(describing: source.readOffset)) at the end (\(expected.count) bytes)")
        agree(source, "at the end")
        stream.close()
    }

    static func checkClose(_ make: () -> any BlobDataSource, _ r: Recorder) {
        let stream = BlobInputStream(dataSource: make())
        stream.open()
        stream.close()
        var byte: UInt8 = 0
        r.expect(stream.read(&byte, maxLength: 1) == -1, "a read after close did not return -1")
        r.expect(stream.streamStatus == .closed, "status \(stream.streamStatus.rawValue) after close")
        stream.open()
        r.expect(stream.streamStatus == .closed, "a closed stream reopened")
    }

    static func checkAsync(_ expected: Data, _ make: () -> any BlobDataSource, _ r: Recorder) {
        let result = AsynchronousRead(readingHere: make(), timeout: 20)
        let events = result.events
        r.expect(result.finished, "asynchronous mode did not reach its end; events: \(events)")
        r.expect(events.first == "open", "the first event is \(events.first ?? "none"), not openCompleted")
        r.expect(events.last == "end", "the last event is \(events.last ?? "none"), not endEncountered")
        r.expect(
            !expected.isEmpty ? events.count > 1 && events[1] == "bytes" : true,
            "hasBytesAvailable did not follow openCompleted: \(events)")
        r.expect(result.data == expected, "asynchronous mode: \(describe(result.data, against: expected))")
    }

    static func checkError(_ make: () -> any BlobDataSource, _ r: Recorder) {
        let source = make()
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        let (_, last) = drain(stream, size: 65_536)
        r.expect(last == -1, "a failing source ended with \(last) instead of -1 (a clean end hides the failure)")
        r.expect(stream.streamStatus == .error, "status \(stream.streamStatus.rawValue) after the failure")
        let error = stream.streamError as? BlobStreamError
        r.expect(
            error?.cause != nil,
            "streamError does not carry the source's error as its cause: \(String(describing: stream.streamError))")
        r.expect(source.error != nil, "the source returned -1 without setting state.error")
        stream.close()
    }
}
