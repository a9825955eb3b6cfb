import BlobStream
import Dispatch

/// Which rendition of an asset a representation holds.
public enum AssetRendition: String, Sendable, Equatable, CustomStringConvertible {
    /// The edited rendition (the original iOS library's "adjusted" image).
    case edited
    /// The file as it was captured.
    case original

    /// The raw value, as URLs and messages spell it.
    public var description: String { rawValue }
}

/// Which rendition a client asks for.
public enum AssetRenditionChoice: String, Sendable, Equatable, CustomStringConvertible {
    /// The edited rendition when the asset has one, the original otherwise (the default).
    case current
    /// Always the original, even when an edited rendition exists.
    case original

    /// The raw value, as URLs and messages spell it.
    public var description: String { rawValue }
}

extension BlobStreamError.Code {
    /// A representation of an asset was invalidated by a change of its library; looking the
    /// asset up again gives a fresh one. `AssetRepresentation.getBytes` throws it, and only
    /// it, for that reason; `AssetDataSource` recovers from it by itself.
    public static let invalidated = BlobStreamError.Code("invalidated")
}

/// One rendition of an asset: its size, name, type and bytes.
///
/// ## Implementing a representation
///
/// - `size`, `filename`, `uti`, `rendition` and `fingerprint` are fixed for the life of the
///   representation (what it was when it was looked up).
/// - `getBytes(into:fromOffset:length:)` is expensive (I/O, decoding) and may block; it is
///   called from any thread, one call at a time per client.
/// - When the library changed after the representation was handed out, `getBytes` throws a
///   `BlobStreamError` with code `.invalidated` (and nothing else does): the client looks the
///   asset up again to decide whether it may go on (`AssetDataSource` compares `size`, and
///   reads the bytes it already handed out again from the new representation). That holds
///   for a call at `size` too (which reads nothing).
///   Other failures (I/O errors) are ordinary errors, and final.
/// - `checkValid()` answers the same question without reading; the default asks `getBytes`
///   for a byte at `size`. Implement it when that is cheaper or when `getBytes` at `size`
///   does not check.
public protocol AssetRepresentation: AnyObject, Sendable {
    /// The number of bytes.
    var size: Int64 { get }
    /// The file name, e.g. `IMG_0001.JPG`.
    var filename: String { get }
    /// The uniform type identifier, e.g. `public.jpeg`.
    var uti: String { get }
    /// Whether these are the edited or the original bytes.
    var rendition: AssetRendition { get }
    /// An opaque value that changes when the bytes change. Two representations of the same
    /// asset with equal `size` and `fingerprint` hold the same bytes, as far as the library
    /// can tell (say in its documentation how far that is). `AssetDataSource` does not rely
    /// on it to resume after an invalidation: it compares the bytes.
    var fingerprint: String { get }

    /// Copies up to `length` bytes starting at `offset` into `buffer`; returns how many
    /// (> 0 while `offset < size`; fewer than asked only at the end; 0 at `size`).
    ///
    /// - Throws: `BlobStreamError` `.invalidated` when the representation was invalidated by
    ///   a change of the library; any other error for a failure that looking up again would
    ///   not cure.
    func getBytes(into buffer: UnsafeMutableRawPointer, fromOffset offset: Int64, length: Int) throws -> Int

    /// Returns when the representation is still valid; throws what `getBytes` would throw
    /// now (`BlobStreamError` `.invalidated` after a change of the library), without reading.
    /// `AssetDataSource` calls it before it announces the end of a read, so that a change
    /// made after its last `getBytes` is not taken for a clean end.
    ///
    /// The default calls `getBytes` for one byte at `size`, which reads nothing.
    func checkValid() throws
}

extension AssetRepresentation {
    /// Calls `getBytes` for one byte at `size` (which reads nothing and throws `.invalidated`
    /// once the representation was invalidated).
    public func checkValid() throws {
        var byte: UInt8 = 0
        _ = try withUnsafeMutableBytes(of: &byte) { try getBytes(into: $0.baseAddress!, fromOffset: size, length: 1) }
    }
}

/// An asset as a library answers a lookup: its URL, id, and its renditions.
public struct Asset: Sendable {
    /// The asset's URL, `assets-library://asset/asset.JPG?id=ID&ext=JPG`.
    public let url: String
    /// The library's stable id of the asset.
    public let id: String
    /// The bytes as captured.
    public let original: any AssetRepresentation
    /// The edited rendition, when the asset has been edited.
    public let edited: (any AssetRepresentation)?

    /// Makes an asset.
    public init(url: String, id: String, original: any AssetRepresentation, edited: (any AssetRepresentation)?) {
        self.url = url
        self.id = id
        self.original = original
        self.edited = edited
    }

    /// The representation a client asking for `choice` gets: `.current` is the edited
    /// rendition when there is one, the original otherwise.
    public func representation(_ choice: AssetRenditionChoice) -> any AssetRepresentation {
        switch choice {
        case .current: edited ?? original
        case .original: original
        }
    }
}

/// A photo library: looks assets up by URL, asynchronously, and answers on its own queue.
///
/// ## Implementing a library
///
/// - `asset(for:completion:)` returns at once and calls `completion` exactly once, later, on
///   `callbackQueue` — never inside the call, even for an error. (A client that waits for
///   the answer synchronously can then tell, with `callbackQueue`, that waiting on that queue
///   would never end: contract rule 3.)
/// - Errors are `BlobStreamError`s whose message names the URL: `.malformedURL`, `.notFound`
///   (unknown id, missing library), `.ioFailed`.
/// - Representations handed out become invalid when the library changes (see
///   `AssetRepresentation`).
///
/// ```swift
/// final class OneAssetLibrary: AssetLibrary {
///     let callbackQueue = DispatchQueue(label: "library")
///     let asset: Asset
///     init(asset: Asset) { self.asset = asset }
///     func asset(for url: String, completion: @escaping @Sendable (Result<Asset, any Error>) -> Void) {
///         let asset = self.asset
///         callbackQueue.async {
///             completion(url == asset.url ? .success(asset)
///                 : .failure(BlobStreamError(.notFound, "no asset '\(url)'")))
///         }
///     }
/// }
/// ```
public protocol AssetLibrary: AnyObject, Sendable {
    /// The queue every completion runs on.
    var callbackQueue: DispatchQueue { get }

    /// Looks up the asset `url` names; answers on `callbackQueue`, never inside the call.
    func asset(for url: String, completion: @escaping @Sendable (Result<Asset, any Error>) -> Void)
}
