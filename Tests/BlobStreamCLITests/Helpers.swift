import Foundation

/// A fresh temporary folder, removed at the end.
final class TemporaryFolder {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-cli-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func path(_ name: String) -> String { path + "/" + name }

    /// Writes `data` to `name` in the folder; its path.
    func file(_ name: String, _ data: Data) throws -> String {
        try data.write(to: URL(fileURLWithPath: path(name)))
        return path(name)
    }
}
