import Glibc
import NIOCore
import NIOPosix

/// One TCP connection of a ``SocketPeer`` (or one it opened, ``connect(host:port:_:)``), read
/// and written as raw bytes by the task that serves it: an HTTP head up to its blank line,
/// exact counts, whatever comes next; closed cleanly or reset.
public final class PeerConnection {
    /// Thrown when the other side ends the connection before a count of bytes came.
    public struct Ended: Error, CustomStringConvertible {
        /// What was missing.
        public let description: String
        /// An end, saying what was missing.
        public init(description: String) { self.description = description }
    }

    /// The writing side, which another task may use (a tunnel relays in both directions).
    public struct Writer: Sendable {
        let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
        let allocator: ByteBufferAllocator

        /// Writes `bytes` (and flushes).
        public func write(_ bytes: some Sequence<UInt8>) async throws {
            try await outbound.write(allocator.buffer(bytes: bytes))
        }
    }

    /// The channel, for what the reading and writing here do not cover.
    public let channel: any Channel
    /// The writing side.
    public let writer: Writer
    private var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private var buffered: [UInt8] = []
    private let registry: PeerRegistry?

    init(
        channel: any Channel, _ inbound: NIOAsyncChannelInboundStream<ByteBuffer>,
        _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, registry: PeerRegistry?
    ) {
        self.channel = channel
        self.inbound = inbound.makeAsyncIterator()
        self.writer = Writer(outbound: outbound, allocator: channel.allocator)
        self.registry = registry
    }

    /// Connects to `host`:`port` (10 s at most), runs `body` with the connection and closes it.
    public static func connect<T: Sendable>(
        host: String, port: Int, _ body: (sending PeerConnection) async throws -> T
    ) async throws -> T {
        let wrapped = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(InboundCopier())
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await wrapped.executeThenClose { inbound, outbound in
            try await body(PeerConnection(channel: wrapped.channel, inbound, outbound, registry: nil))
        }
    }

    /// The next bytes: those read but not consumed yet, else the next that arrive; nil once
    /// the other side has closed.
    public func readAvailable() async throws -> [UInt8]? {
        if !buffered.isEmpty {
            defer { buffered = [] }
            return buffered
        }
        guard let next = try await receive() else { return nil }
        return next
    }

    /// Reads up to the blank line that ends an HTTP head and returns the head (without it,
    /// Latin-1); the bytes after it stay to be read. Nil when the connection ends first.
    public func readHead() async throws -> String? {
        var searched = 0
        while true {
            if let end = Self.find([13, 10, 13, 10], in: buffered, from: max(0, searched - 3)) {
                let head = String(String.UnicodeScalarView(buffered[..<end].map { Unicode.Scalar($0) }))
                buffered.removeFirst(end + 4)
                return head
            }
            searched = buffered.count
            guard let next = try await receive() else { return nil }
            buffered += next
        }
    }

    /// Reads a line that ends with CRLF and returns it without its end; throws ``Ended`` first.
    public func readLine() async throws -> String {
        var searched = 0
        while true {
            if let end = Self.find([13, 10], in: buffered, from: max(0, searched - 1)) {
                let line = String(decoding: buffered[..<end], as: UTF8.self)
                buffered.removeFirst(end + 2)
                return line
            }
            searched = buffered.count
            guard let next = try await receive() else { throw Ended(description: "the line's end never came") }
            buffered += next
        }
    }

    /// Reads exactly `count` bytes; throws ``Ended`` when the connection ends first.
    public func read(exactly count: Int) async throws -> [UInt8] {
        while buffered.count < count {
            guard let next = try await receive() else {
                throw Ended(description: "the body ended after \(buffered.count) of \(count) bytes")
            }
            buffered += next
        }
        defer { buffered.removeFirst(count) }
        return Array(buffered.prefix(count))
    }

    /// Reads and discards until the other side closes.
    public func drain() async throws {
        buffered = []
        while try await receive() != nil {}
    }

    /// Writes `bytes` (and flushes).
    public func write(_ bytes: some Sequence<UInt8>) async throws { try await writer.write(bytes) }

    /// Writes `text` as UTF-8 (and flushes).
    public func write(_ text: String) async throws { try await writer.write(Array(text.utf8)) }

    /// Resets the connection: the kernel sends RST, not FIN (`SO_LINGER` 0, then close).
    public func reset() async {
        try? await (channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
        try? await channel.close().get()
    }

    /// Closes the connection cleanly (FIN) after what was written.
    public func close() async {
        await flush()
        try? await channel.close().get()
    }

    /// Returns once everything written so far is in the kernel's hands: a close right after
    /// the writer's last `write` would drop what a slow reader has not taken yet. (An empty
    /// write queued behind the others completes after them.)
    func flush() async {
        try? await channel.writeAndFlush(ByteBuffer()).get()
    }

    /// Appends `line` to the peer's record `name` (``SocketPeer/recorded(_:)``); returns how
    /// many lines `name` held before.
    @discardableResult
    public func record(_ line: String, in name: String) -> Int { registry?.record(line, in: name) ?? 0 }

    private func receive() async throws -> [UInt8]? {
        guard let buffer = try await inbound.next() else { return nil }
        return Array(buffer.readableBytesView)
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        return (start...(bytes.count - needle.count)).first { at in
            bytes[at] == needle[0] && bytes[at..<(at + needle.count)].elementsEqual(needle)
        }
    }
}
