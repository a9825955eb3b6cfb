import Foundation

/// Where the library may write a file it was asked to write (an index): a new path, or an
/// existing regular file (through any symbolic link), never a FIFO, a device, a socket or a
/// folder, which a write to a temporary file renamed over it would replace with a regular file.
package enum WriteDestination {
    /// Throws `.unsupported` naming `path` and what is there, unless it is absent or a
    /// regular file once links are followed.
    package static func check(_ path: String, role: String) throws(BlobStreamError) {
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: resolved),
            let type = attributes[.type] as? FileAttributeType
        else { return }
        guard type != .typeRegular else { return }
        let what: String =
            switch type {
            case .typeDirectory: "a folder"
            case .typeCharacterSpecial, .typeBlockSpecial: "a device"
            case .typeSocket: "a socket"
            default: "not a regular file"
            }
        throw BlobStreamError(
            .unsupported, "cannot write \(role) to '\(path)': it is \(what), which the write would replace")
    }
}
