import Foundation

/// Parses a stored multipart body with Werkzeug (a well-kept parser, not one written here)
/// and prints one JSON object: fields, and files with filename, content type and sha256.
let werkzeugParser = #"""
    import hashlib, io, json, sys
    from werkzeug.formparser import parse_form_data
    body = open(sys.argv[1], "rb").read()
    env = {"REQUEST_METHOD": "POST", "CONTENT_TYPE": sys.argv[2], "CONTENT_LENGTH": str(len(body)),
           "wsgi.input": io.BytesIO(body)}
    _, form, files = parse_form_data(env)
    print(json.dumps({
        "fields": {k: form.getlist(k) for k in form.keys()},
        "files": {k: [{"filename": f.filename, "type": f.mimetype,
                       "sha256": hashlib.sha256(f.read()).hexdigest()} for f in files.getlist(k)] for k in files.keys()},
    }, sort_keys=True))
    """#

public struct ParsedForm: Decodable, Sendable {
    public struct File: Decodable, Equatable, Sendable {
        public let filename: String
        public let type: String
        public let sha256: String
        public init(filename: String, type: String, sha256: String) {
            self.filename = filename
            self.type = type
            self.sha256 = sha256
        }
    }
    public let fields: [String: [String]]
    public let files: [String: [File]]
}

public func parseWithWerkzeug(_ body: Data, contentType: String) throws -> ParsedForm {
    let folder = FileManager.default.temporaryDirectory
    let bodyFile = folder.appendingPathComponent("multipart-\(UUID().uuidString)")
    let script = folder.appendingPathComponent("parse-\(UUID().uuidString).py")
    try body.write(to: bodyFile)
    try werkzeugParser.write(to: script, atomically: true, encoding: .utf8)
    defer {
        try? FileManager.default.removeItem(at: bodyFile)
        try? FileManager.default.removeItem(at: script)
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", script.path, bodyFile.path, contentType]
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return try JSONDecoder().decode(ParsedForm.self, from: data)
}
