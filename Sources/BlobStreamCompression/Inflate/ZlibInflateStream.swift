import CBlobStreamZlib

/// The one place the kit starts and frees zlib's inflate state: a `z_stream` at a stable heap
/// address (zlib keeps a pointer back to it in its state, so it never lives on the stack),
/// for gzip members (`ZlibMemberInflater`, windowBits 15 + 16) or raw deflate (`RawInflater`,
/// windowBits −15).
enum ZlibInflateStream {
    /// Allocates and initializes a `z_stream` for `windowBits`.
    static func make(windowBits: Int32) throws(ZlibError) -> UnsafeMutablePointer<z_stream> {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // `inflateInit2` is a macro that does not import; this is what it expands to.
        let rc = inflateInit2_(stream, windowBits, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard rc == Z_OK else {
            let error = ZlibError(rc, stream)
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw error
        }
        return stream
    }

    /// Frees zlib's state and the `z_stream`.
    static func free(_ stream: UnsafeMutablePointer<z_stream>) {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }
}

extension ZlibError {
    /// zlib's answer `rc`, in the words zlib left in `stream` (or `zError`'s).
    init(_ rc: Int32, _ stream: UnsafeMutablePointer<z_stream>) {
        let message: String
        if let msg = stream.pointee.msg {
            message = String(cString: msg)
        } else if let text = zError(rc) {
            message = String(cString: text)
        } else {
            message = "error \(rc)"
        }
        self.init(code: rc, message: message)
    }
}
