extension SocketPeer {
    /// An HTTP proxy that only tunnels (`CONNECT host:port`), as HTTPS through a proxy
    /// needs; each CONNECT line is recorded in `connects` (``recorded(_:)``). Another method
    /// is answered 405.
    public static func connectProxy() throws -> SocketPeer {
        try SocketPeer { client in
            guard let head = try await client.readHead() else { return }
            let line = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
            client.record(line, in: "connects")
            let parts = line.split(separator: " ")
            guard parts.count >= 2, parts[0] == "CONNECT", let colon = parts[1].lastIndex(of: ":"),
                let port = Int(parts[1][parts[1].index(after: colon)...])
            else {
                try await client.write(
                    "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            }
            try await PeerConnection.connect(host: String(parts[1][..<colon]), port: port) { upstream in
                try await client.write("HTTP/1.1 200 Connection established\r\n\r\n")
                await tunnel(client, upstream)
            }
        }
    }

    /// Relays bytes both ways until either side closes.
    private static func tunnel(_ a: PeerConnection, _ b: PeerConnection) async {
        let (toA, toB) = (a.writer, b.writer)
        let (channelA, channelB) = (a.channel, b.channel)
        let (fromA, fromB) = (Handoff(a), Handoff(b))
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while let data = try? await fromA.connection.readAvailable() { try? await toB.write(data) }
            }
            group.addTask {
                while let data = try? await fromB.connection.readAvailable() { try? await toA.write(data) }
            }
            // One side closed: the tunnel is over; closing both ends the other relay's read.
            _ = await group.next()
            channelA.close(promise: nil)
            channelB.close(promise: nil)
        }
    }
}

/// Hands a connection to the one task that reads it from then on.
private struct Handoff: @unchecked Sendable {
    // Unchecked Sendable: after the hand-off only the receiving task reads the connection
    // (its buffer and inbound iterator); the others use only its `Sendable` writer and channel.
    let connection: PeerConnection
    init(_ connection: PeerConnection) { self.connection = connection }
}
