import BlobStream
import CBlobStreamIsal

/// Which inflater a `GzipDataSource` (and the gzip layer of an archive) uses.
///
/// zlib is the reference path and is always there; ISA-L (Intel's Intelligent Storage
/// Acceleration Library) inflates about 2.5× faster on x86-64. ISA-L is loaded at run time
/// (`dlopen` of `libisal.so.2`): nothing links it, so a program built where ISA-L is missing
/// still builds and runs. It is used when BlobStream was built with ISA-L's header
/// (Debian: `libisal-dev`) and the library is there at run time (Debian: `libisal2`).
///
/// Both engines check the same things (header, FHCRC, every member's CRC-32 and ISIZE) and
/// report the same kinds of error with the same words; the cause is a `ZlibError` or an
/// `IsalError`.
public enum InflateEngine: String, Sendable, CaseIterable, CustomStringConvertible {
    /// ISA-L when it can be loaded, zlib otherwise (the default).
    case automatic = "auto"
    /// zlib, always.
    case zlib
    /// ISA-L; a source that cannot load it fails at open with `.unsupported`.
    case isal

    /// Whether ISA-L's inflate can be loaded on this system.
    public static var isIsalAvailable: Bool { IsalAvailability.system.isAvailable }

    /// Whether this engine can be used here: always for `.automatic` and `.zlib`; for
    /// `.isal`, when ISA-L can be loaded.
    public var isAvailable: Bool { self != .isal || Self.isIsalAvailable }

    /// The engine `.automatic` stands for here (`.isal` or `.zlib`); the others as they are.
    public var resolved: InflateEngine { resolved(with: .system) }

    /// The spelling the command line and `init?(rawValue:)` take: `auto`, `zlib`, `isal`.
    public var description: String { rawValue }

    package func resolved(with isal: IsalAvailability) -> InflateEngine {
        self == .automatic ? (isal.isAvailable ? .isal : .zlib) : self
    }

    /// Makes this engine's inflater for gzip members; `.isal` where ISA-L is unavailable
    /// fails with `.unsupported`, naming why. `name` names the source in messages.
    package func makeInflater(isal: IsalAvailability, name: String) throws(BlobStreamError) -> any GzipMemberInflating {
        switch resolved(with: isal) {
        case .isal:
            if let reason = isal.unavailableReason {
                throw BlobStreamError(
                    .unsupported, "\(name): the ISA-L inflate engine was asked for but is unavailable: \(reason)")
            }
            do {
                return try IsalMemberInflater()
            } catch {
                throw BlobStreamError(
                    .sourceFailed, "\(name): cannot start ISA-L's inflate: \(error.message)", cause: error)
            }
        case .zlib, .automatic:
            do {
                return try ZlibMemberInflater()
            } catch {
                throw BlobStreamError(.sourceFailed, "\(name): cannot initialize zlib", cause: error)
            }
        }
    }
}

/// Whether ISA-L can be used: `.system` asks the loader (once per process); tests make an
/// unavailable one to exercise that path without uninstalling anything.
package struct IsalAvailability: Sendable {
    /// Why ISA-L cannot be used, or nil when it can.
    package let unavailableReason: String?

    package var isAvailable: Bool { unavailableReason == nil }

    /// What this system offers (libisal.so.2 loaded on first use).
    package static var system: IsalAvailability {
        IsalAvailability(unavailableReason: bs_isal_unavailable_reason().map { String(cString: $0) })
    }

    /// ISA-L treated as missing, for `reason`.
    package static func unavailable(_ reason: String) -> IsalAvailability {
        IsalAvailability(unavailableReason: reason)
    }
}
