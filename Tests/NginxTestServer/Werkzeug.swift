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

/// A multipart body as Werkzeug parsed it: its fields and its files.
public struct ParsedForm: Decodable, Sendable {
    /// One file part: its name, its content type and the SHA-256 of its bytes.
    public struct File: Decodable, Equatable, Sendable {
        /// The part's `filename`.
        public let filename: String
        /// The part's content type.
        public let type: String
        /// The SHA-256 of the part's bytes, in lowercase hex.
        public let sha256: String
        /// A file part, as a test expects it.
        public init(filename: String, type: String, sha256: String) {
            self.filename = filename
            self.type = type
            self.sha256 = sha256
        }
    }
    /// The plain fields, by name (a name may repeat).
    public let fields: [String: [String]]
    /// The file parts, by field name.
    public let files: [String: [File]]
}

/// Parses `body` (a multipart body with `contentType`'s boundary) with Werkzeug in a Python process.
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
