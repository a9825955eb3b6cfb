import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory generate-fixtures`: regenerates
/// `Fixtures/` by running the package's `blobstream-fixtures` tool (which does the work and
/// is tested like any other target).
@main
struct GenerateFixtures: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let tool = try context.tool(named: "blobstream-fixtures")
        let fixtures = context.package.directoryURL.appendingPathComponent("Fixtures")
        let process = Process()
        process.executableURL = tool.url
        process.arguments = [fixtures.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw GenerateFixturesError(
                "blobstream-fixtures exited with status \(process.terminationStatus); see its message above")
        }
    }
}

struct GenerateFixturesError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
