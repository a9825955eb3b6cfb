import NIOCore

/// Hands each received buffer on as a copy made on the event loop, so that the buffer NIO
/// read into is never seen by another thread. NIO reuses its pooled receive buffers once
/// they are uniquely referenced again; a peer's task that read such a buffer on its own
/// thread and let it go there is ordered before that reuse only by the (uninstrumented)
/// reference count, which `make tsan` cannot see. One memcpy per read, in test peers only.
final class InboundCopier: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let received = unwrapInboundIn(data)
        context.fireChannelRead(wrapInboundOut(context.channel.allocator.buffer(buffer: received)))
    }
}
