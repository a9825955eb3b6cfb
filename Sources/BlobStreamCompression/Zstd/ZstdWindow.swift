// The window sizes a zstd frame may ask of a decoder, and the defaults this package keeps.

/// The windows a zstd frame may ask of a decoder.
public enum ZstdWindow {
    /// zstd's own default limit, 2^27 bytes (128 MiB): what `zstd -d` accepts without
    /// `--long`, and what a frame made by `zstd -19` or less (without `--long`) stays under.
    public static let defaultLog = 27
    /// The largest window libzstd can decode on a 64-bit machine: 2^31 bytes (2 GiB).
    public static let maximumLog = 31

    /// The log2 of the smallest window that holds `value` bytes.
    package static func log2(roundingUp value: UInt64) -> Int {
        value <= 1 ? 0 : 64 - (value - 1).leadingZeroBitCount
    }
}
