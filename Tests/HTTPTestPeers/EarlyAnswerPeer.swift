/// An HTTP peer on 127.0.0.1 (in this process) that answers `201 Created` after it has read
/// `answerAfter` bytes of the request body, not the whole body. Then it either goes on
/// reading and discarding the rest after a 3 s pause (`drain`, so the client sees no error
/// from the connection) or closes the connection at once. It records nothing.
public final class EarlyAnswerPeer: Sendable {
    private let peer: SocketPeer

    /// The port it listens on (127.0.0.1).
    public var port: Int { peer.port }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { peer.baseURL }

    /// Starts the peer; `answerAfter` body bytes (at least) are read before the answer.
    public init(answerAfter: Int, drain: Bool = true) throws {
        // A small receive buffer, so that the kernel does not take in a large part of the body
        // for the peer before it answers (the client must still be writing when the answer comes).
        peer = try SocketPeer(receiveBufferSize: 65536) { connection in
            guard try await connection.readHead() != nil else { return }
            var got = 0
            while got < answerAfter, let data = try await connection.readAvailable() { got += data.count }
            try await connection.write("HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            guard drain else { return await connection.close() }
            // A slow reader, on purpose: nothing is read for a while, so the client's writes
            // stall on full buffers with most of the body unwritten and its answer is seen while
            // the body is still being written even on a slow machine (under ThreadSanitizer a
            // peer that drained at once let a slowed client finish writing first). No event
            // stands for "the client has seen the answer" on this side of the connection.
            try await Task.sleep(for: .seconds(3))
            try? await connection.drain()
            await connection.close()
        }
    }

    /// Stops the peer.
    public func stop() { peer.stop() }
}
