import Foundation
import HTTPTestPeers

/// One client connection of a ``FaultProxy``: its request read, the rule that picks it
/// applied, the answer relayed (or damaged), the exchange logged.
struct FaultProxyExchange: Sendable {
    let upstreamHost: String
    let upstreamPort: Int
    let state: FaultProxyState

    /// The S3 error code the proxy answers with a status when its rule names none.
    static let codes = [
        500: "InternalError", 502: "BadGateway", 503: "ServiceUnavailable", 404: "NoSuchKey", 403: "AccessDenied",
        400: "BadRequest",
    ]

    /// Headers that the proxy sets itself on the upstream request.
    static let notForwarded: Set<String> = [
        "connection", "expect", "content-length", "transfer-encoding", "keep-alive", "proxy-connection",
    ]

    /// Serves the one request of `client`.
    func serve(_ client: PeerConnection) async {
        guard let head = try? await client.readHead() else { return }
        let lines = head.components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ", maxSplits: 2).map(String.init)
        guard requestLine.count >= 2 else { return }
        let (method, target) = (requestLine[0], requestLine[1])
        let headers: [(name: String, value: String)] = lines.dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (
                line[..<colon].trimmingCharacters(in: .whitespaces),
                line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            )
        }
        var names: [String: String] = [:]
        for (name, value) in headers { names[name.lowercased()] = value }
        state.began()
        let chosen = state.choose(method: method, target: target)
        var seen = FaultProxy.Seen(
            method: method, target: target, headers: names, bodyBytes: 0, action: chosen?.rule.action.name ?? "forward",
            rule: chosen?.index, status: nil)
        defer { state.record(seen) }
        do {
            if names["expect"]?.lowercased() == "100-continue" {
                try await client.write("HTTP/1.1 100 Continue\r\n\r\n")
            }
            let length = Int(names["content-length"] ?? "0") ?? 0
            if case .drop(let afterBytes) = chosen?.rule.action {
                let got = try await client.read(exactly: min(afterBytes ?? length / 2, length))
                seen.bodyBytes = got.count
                return await client.reset()
            }
            var body =
                names["transfer-encoding"]?.lowercased().contains("chunked") == true
                ? try await Self.readChunked(client) : try await client.read(exactly: length)
            seen.bodyBytes = body.count
            switch chosen?.rule.action {
            case .status(let status, let code):
                seen.status = try await answerError(client, status: status, code: code, target: target)
                return
            case .outage(_, let status):
                seen.status = try await answerError(client, status: status, code: nil, target: target)
                return
            case .answer(let status, let fields, let text):
                var answer =
                    "HTTP/1.1 \(status) Answered\r\nContent-Length: \(text.utf8.count)\r\nConnection: close\r\n"
                for (name, value) in fields.sorted(by: { $0.key < $1.key }) { answer += "\(name): \(value)\r\n" }
                try await client.write(answer + "\r\n" + text)
                seen.status = status
                return
            case .corrupt(let offset) where !body.isEmpty:
                let at = min(offset ?? body.count / 2, body.count - 1)
                body[at] ^= 0xFF
            case .delay(let seconds):
                // The fault itself: the request is held this long before it goes on.
                try await Task.sleep(for: .seconds(seconds))
            default: break
            }
            var request = ["\(method) \(target) HTTP/1.1"]
            request += headers.filter { !Self.notForwarded.contains($0.name.lowercased()) }.map {
                "\($0.name): \($0.value)"
            }
            if !body.isEmpty || method == "PUT" || method == "POST" { request.append("Content-Length: \(body.count)") }
            request.append("Connection: close")
            let bytes = Array((request.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body
            if case .cut(let afterBytes) = chosen?.rule.action {
                seen.status = try await forwardCut(bytes, to: client, afterBytes: afterBytes)
            } else if case .rewrite(let fields) = chosen?.rule.action {
                seen.status = try await forwardRewritten(bytes, to: client, headers: fields)
            } else if case .flipAnswer(let offset) = chosen?.rule.action {
                seen.status = try await forwardFlipped(bytes, to: client, offset: offset)
            } else {
                let relayed = Relayed()
                defer { seen.answerBytes = relayed.bytes }
                seen.status = try await forward(bytes, to: client, relayed: relayed)
            }
        } catch {
            // The client or the upstream went away: logged without a status.
        }
    }

    /// The bytes of an answer relayed so far, counted as they are handed to the client's
    /// connection (a client gone mid-answer ends the relay with a throw).
    final class Relayed: @unchecked Sendable {
        var bytes = 0
    }

    /// Sends `request` upstream and relays the answer to its end; returns its status.
    private func forward(_ request: [UInt8], to client: PeerConnection, relayed: Relayed) async throws -> Int? {
        try await PeerConnection.connect(host: upstreamHost, port: upstreamPort) { upstream in
            try await upstream.write(request)
            var first: [UInt8] = []
            while let data = try await upstream.readAvailable() {
                if first.count < 64 { first += data }
                // Counted as handed to the client's connection: a write the client cuts by
                // closing may have delivered part of it.
                relayed.bytes += data.count
                try await client.write(data)
            }
            return Self.status(of: first)
        }
    }

    /// Sends `request` upstream, reads the whole answer, relays its head and `afterBytes` of
    /// its body (nil: half; no body: half the head), and closes the client's connection.
    private func forwardCut(_ request: [UInt8], to client: PeerConnection, afterBytes: Int?) async throws -> Int? {
        let answer = try await wholeAnswer(to: request)
        let separator: [UInt8] = [13, 10, 13, 10]
        let end = answer.indices.first { answer[$0...].starts(with: separator) }
        let head = end.map { Array(answer[..<$0]) } ?? answer
        let rest = end.map { Array(answer[($0 + 4)...]) } ?? []
        if !rest.isEmpty {
            let keep = afterBytes.map { min($0, max(rest.count - 1, 0)) } ?? rest.count / 2
            try await client.write(head + separator + rest.prefix(keep))
        } else {
            try await client.write(head.prefix(head.count / 2))
        }
        await client.close()
        return Self.status(of: head)
    }

    /// Sends `request` upstream, reads the whole answer, relays it with `headers` set in its
    /// head (replacing fields of the same names), and closes the client's connection.
    private func forwardRewritten(_ request: [UInt8], to client: PeerConnection, headers: [String: String])
        async throws -> Int?
    {
        let answer = try await wholeAnswer(to: request)
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = answer.indices.first(where: { answer[$0...].starts(with: separator) }) else {
            try await client.write(answer)
            return Self.status(of: answer)
        }
        let replaced = Set(headers.keys.map { $0.lowercased() })
        var lines = String(decoding: answer[..<end], as: UTF8.self).components(separatedBy: "\r\n").filter { line in
            guard let colon = line.firstIndex(of: ":") else { return true }
            return !replaced.contains(line[..<colon].trimmingCharacters(in: .whitespaces).lowercased())
        }
        lines += headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        try await client.write(Array((lines.joined(separator: "\r\n")).utf8) + answer[end...])
        await client.close()
        return Self.status(of: Array(answer[..<end]))
    }

    /// Sends `request` upstream, reads the whole answer, relays it with its body's byte at
    /// `offset` (nil: the middle one) flipped, and closes the client's connection.
    private func forwardFlipped(_ request: [UInt8], to client: PeerConnection, offset: Int?) async throws -> Int? {
        var answer = try await wholeAnswer(to: request)
        let separator: [UInt8] = [13, 10, 13, 10]
        if let end = answer.indices.first(where: { answer[$0...].starts(with: separator) }), end + 4 < answer.count {
            let body = answer.count - (end + 4)
            answer[end + 4 + min(offset ?? body / 2, body - 1)] ^= 0xFF
        }
        try await client.write(answer)
        await client.close()
        return Self.status(of: answer)
    }

    /// Sends `request` upstream and reads its whole answer (head and body).
    private func wholeAnswer(to request: [UInt8]) async throws -> [UInt8] {
        try await PeerConnection.connect(host: upstreamHost, port: upstreamPort) { upstream in
            try await upstream.write(request)
            var answer: [UInt8] = []
            while let data = try await upstream.readAvailable() { answer += data }
            return answer
        }
    }

    /// Answers `status` with an S3-style XML error; returns the status.
    private func answerError(_ client: PeerConnection, status: Int, code: String?, target: String) async throws -> Int {
        let code = code ?? Self.codes[status] ?? "InternalError"
        let body =
            "<?xml version='1.0' encoding='UTF-8'?>\n<Error><Code>\(code)</Code>"
            + "<Message>injected by the fault proxy</Message><Resource>\(target)</Resource></Error>"
        try await client.write(
            "HTTP/1.1 \(status) \(code)\r\nContent-Type: application/xml\r\nContent-Length: \(body.utf8.count)"
                + "\r\nConnection: close\r\n\r\n" + body)
        return status
    }

    /// The decoded body of a chunked request (its trailers read and dropped).
    private static func readChunked(_ client: PeerConnection) async throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let line = try await client.readLine()
            let hex = line.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            guard let size = Int(hex.trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw PeerConnection.Ended(description: "a chunk size that is not hexadecimal: \(line)")
            }
            if size == 0 {
                while try await !client.readLine().isEmpty {}
                return body
            }
            body += try await client.read(exactly: size + 2).dropLast(2)
        }
    }

    /// The status of an answer that starts with `bytes` (`HTTP/1.1 201 …`).
    private static func status(of bytes: [UInt8]) -> Int? {
        let fields = String(decoding: bytes.prefix(64), as: UTF8.self).split(separator: " ", maxSplits: 2)
        return fields.count >= 2 ? Int(fields[1]) : nil
    }
}
