import NIOCore
import NIOHTTP1

/// Answers the requests of one connection to a `MisbehavingHTTPPeer` (on its event loop).
final class PeerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let peer: MisbehavingHTTPPeer?
    private var head: HTTPRequestHead?
    /// The body of a PUT, as it arrives.
    private var uploaded: [UInt8] = []

    init(peer: MisbehavingHTTPPeer?) {
        self.peer = peer
    }

    func channelActive(context: ChannelHandlerContext) {
        guard let peer else { return context.close(promise: nil) }
        peer.opened(context.channel)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            uploaded = []
        case .body(let part):
            if head?.method == .PUT { uploaded += part.readableBytesView }
        case .end:
            guard let head, let peer else { return }
            self.head = nil
            if head.method == .PUT, let location = MisbehavingHTTPPeer.elsewhere(head.uri) {
                peer.log(head, "redirect")
                uploaded = []
                return write(.temporaryRedirect, ["Location": location], body: [], context: context)
            }
            if head.method == .PUT {
                // An upload: stored at its path (served to later GETs), answered 201.
                peer.store(uploaded, at: head.uri)
                peer.log(head, "stored")
                uploaded = []
                return write(.created, [:], body: [], context: context)
            }
            respond(to: head, peer: peer, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, peer: MisbehavingHTTPPeer, context: ChannelHandlerContext) {
        switch peer.answer(head) {
        case .redirect(let status, let location):
            peer.log(head, "redirect")
            write(status, ["Location": location], body: [], context: context)
        case .status(let code):
            peer.log(head, code == 404 ? "notFound" : code == 412 ? "refused" : "status")
            write(
                HTTPResponseStatus(statusCode: code), [:], body: Array("status \(code)\n".utf8)[...], context: context)
        case .unsatisfiable(let length):
            peer.log(head, "status")
            write(.rangeNotSatisfiable, ["Content-Range": "bytes */\(length)"], body: [], context: context)
        case .down(let seconds):
            peer.log(head, "down")
            context.close(promise: nil)
            peer.goDown(for: seconds)
        case .hang:
            peer.log(head, "hung")
        case .trickled(let status, let etag, let range, let bytes, let rate):
            peer.log(head, "trickled")
            var headers = etag.map { ["ETag": $0] } ?? [:]
            if let range { headers["Content-Range"] = range }
            trickle(status, headers, body: bytes, bytesPerSecond: rate, context: context)
        case .body(let status, let etag, let range, let bytes, let cutAfter):
            var headers = etag.map { ["ETag": $0] } ?? [:]
            if let range { headers["Content-Range"] = range }
            guard let cutAfter, cutAfter < bytes.count else {
                peer.log(head, "served")
                return write(status, headers, body: bytes, context: context)
            }
            peer.log(head, "cut")
            var fields = HTTPHeaders(headers.map { ($0.key, $0.value) })
            fields.add(name: "Content-Length", value: String(bytes.count))
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: fields))),
                promise: nil)
            let part = context.channel.allocator.buffer(bytes: bytes.prefix(cutAfter))
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(part))), promise: nil)
            context.close(promise: nil)
        }
    }

    /// Sends the head, then `bytes` a tenth of `bytesPerSecond` every 100 ms (at least one
    /// byte), then the end; stops when the connection closes.
    private func trickle(
        _ status: HTTPResponseStatus, _ headers: [String: String], body bytes: ArraySlice<UInt8>, bytesPerSecond: Int,
        context: ChannelHandlerContext
    ) {
        var fields = HTTPHeaders(headers.map { ($0.key, $0.value) })
        fields.add(name: "Content-Length", value: String(bytes.count))
        context.writeAndFlush(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: fields))), promise: nil)
        let step = max(bytesPerSecond / 10, 1)
        let loop = context.eventLoop.assumeIsolated()
        func send(from offset: Int) {
            guard context.channel.isActive else { return }
            let end = min(offset + step, bytes.count)
            let part = context.channel.allocator.buffer(
                bytes: bytes[(bytes.startIndex + offset)..<(bytes.startIndex + end)])
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(part))), promise: nil)
            guard end < bytes.count else {
                return context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
            loop.scheduleTask(in: .milliseconds(100)) { send(from: end) }
        }
        loop.scheduleTask(in: .milliseconds(100)) { send(from: 0) }
    }

    private func write(
        _ status: HTTPResponseStatus, _ headers: [String: String], body: ArraySlice<UInt8>,
        context: ChannelHandlerContext
    ) {
        var fields = HTTPHeaders(headers.map { ($0.key, $0.value) })
        fields.add(name: "Content-Length", value: String(body.count))
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: fields))), promise: nil)
        if !body.isEmpty {
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
