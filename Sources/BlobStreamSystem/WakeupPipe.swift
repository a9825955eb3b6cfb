import SystemPackage

/// A pipe that wakes a `poll`: `SystemFile.readWhenReady(into:count:wake:)` watches its read
/// end, `signal()` writes to its write end from any thread. Both ends close-on-exec and
/// non-blocking. Closed by `close()`.
package struct WakeupPipe: Sendable {
    package let readEnd: FileDescriptor
    package let writeEnd: FileDescriptor

    /// A new pipe, or nil when the system refuses one (out of descriptors).
    package static func make() -> WakeupPipe? {
        guard let ends = try? FileDescriptor.pipe(options: [.closeOnExec, .nonBlocking]) else { return nil }
        return WakeupPipe(readEnd: ends.readEnd, writeEnd: ends.writeEnd)
    }

    /// Signals: every `poll` on the read end, now and later, sees it readable (nothing ever
    /// reads the byte). Never blocks.
    package func signal() {
        var one: UInt8 = 1
        _ = try? withUnsafeBytes(of: &one) { try writeEnd.write($0) }
    }

    /// Closes both ends.
    package func close() {
        try? readEnd.close()
        try? writeEnd.close()
    }
}
