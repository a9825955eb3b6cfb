import BlobStream
import Foundation

/// The keys a request is signed with: an access key id, its secret, and a session token for
/// temporary credentials.
public struct S3Credentials: Sendable, Equatable, CustomStringConvertible {
    /// The access key id (`AKID…`; on OpenStack Swift's s3api, `account:user`).
    public var accessKeyID: String
    /// The secret access key.
    public var secretAccessKey: String
    /// The session token of temporary credentials, sent as `X-Amz-Security-Token`.
    public var sessionToken: String?

    /// Makes credentials.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// The access key id only: the secret never appears in messages or logs.
    public var description: String { "S3Credentials(\(accessKeyID))" }
}

/// Where a store is and how to talk to it: credentials, region, endpoint and addressing,
/// found the way awscli finds them (`S3Configuration.resolve`), or set by hand.
public struct S3Configuration: Sendable {
    /// The keys requests are signed with.
    public var credentials: S3Credentials
    /// The region requests are signed for.
    public var region: String
    /// The store's base URL (`http://127.0.0.1:8080`); nil: AWS's `https://s3.REGION.amazonaws.com`.
    public var endpoint: URL?
    /// True: `ENDPOINT/bucket/key`; false: `bucket.ENDPOINT/key` (virtual-hosted style).
    public var usesPathStyle: Bool

    /// Makes a configuration; path-style addressing by default when an endpoint is given.
    public init(credentials: S3Credentials, region: String, endpoint: URL? = nil, usesPathStyle: Bool? = nil) {
        self.credentials = credentials
        self.region = region
        self.endpoint = endpoint
        self.usesPathStyle = usesPathStyle ?? (endpoint != nil)
    }

    /// The configuration as awscli would find it.
    ///
    /// - credentials: `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`);
    ///   else the profile (`profile`, else `AWS_PROFILE`, else `default`) in the shared
    ///   credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`), then in
    ///   the config file (`AWS_CONFIG_FILE`, else `~/.aws/config`, section `[profile NAME]`,
    ///   `[default]` for the default profile);
    /// - region: `region`, else `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the profile's
    ///   `region` in the config file, else `us-east-1`;
    /// - endpoint: `endpointURL` (`--endpoint-url`), else `AWS_ENDPOINT_URL_S3`, else
    ///   `AWS_ENDPOINT_URL`, else the profile's `endpoint_url`, else AWS.
    ///
    /// - Throws: `BlobStreamError` `.missingCredentials` naming where it looked, `.invalidConfiguration`
    ///   for an endpoint that is not an http(s) URL.
    public static func resolve(
        environment: [String: String] = ProcessInfo.processInfo.environment, profile: String? = nil,
        region: String? = nil, endpointURL: String? = nil, usesPathStyle: Bool? = nil
    ) throws(BlobStreamError) -> S3Configuration {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let profileName = profile ?? environment["AWS_PROFILE"] ?? "default"
        let credentialsPath = environment["AWS_SHARED_CREDENTIALS_FILE"] ?? home + "/.aws/credentials"
        let configPath = environment["AWS_CONFIG_FILE"] ?? home + "/.aws/config"
        let credentialsFile = try INIFile.load(credentialsPath)
        let configFile = try INIFile.load(configPath)
        let configSection = configFile?.section(profileName == "default" ? "default" : "profile \(profileName)")
        let credentialsSection = credentialsFile?.section(profileName)

        let credentials: S3Credentials
        if let id = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"], !id.isEmpty {
            credentials = S3Credentials(
                accessKeyID: id, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"])
        } else if let found = credentialsSection.flatMap(Self.credentials(in:))
            ?? configSection.flatMap(
                Self.credentials(in:))
        {
            credentials = found
        } else {
            throw BlobStreamError.s3(
                .missingCredentials,
                "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or aws_access_key_id and aws_secret_access_key in profile '\(profileName)' of \(credentialsPath) or \(configPath)"
            )
        }
        let regionName =
            region ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? configSection?["region"]
            ?? "us-east-1"
        var endpoint: URL?
        if let text = endpointURL ?? environment["AWS_ENDPOINT_URL_S3"] ?? environment["AWS_ENDPOINT_URL"]
            ?? configSection?["endpoint_url"], !text.isEmpty
        {
            endpoint = try Self.endpoint(text)
        }
        return S3Configuration(
            credentials: credentials, region: regionName, endpoint: endpoint, usesPathStyle: usesPathStyle)
    }

    /// An endpoint URL checked: http or https, a host, no query.
    public static func endpoint(_ text: String) throws(BlobStreamError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty, url.query == nil
        else {
            throw BlobStreamError.s3(
                .invalidConfiguration, "endpoint URL '\(text)' is not an http:// or https:// URL with a host")
        }
        return url
    }

    private static func credentials(in section: [String: String]) -> S3Credentials? {
        guard let id = section["aws_access_key_id"], let secret = section["aws_secret_access_key"], !id.isEmpty
        else { return nil }
        return S3Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: section["aws_session_token"])
    }
}

/// The INI dialect of awscli's credentials and config files: `[section]` lines, `key = value`
/// lines, `#` and `;` comments; indented lines (sub-settings such as `s3 =`) are skipped.
struct INIFile {
    private var sections: [String: [String: String]] = [:]

    /// The file parsed, or nil when it does not exist.
    static func load(_ path: String) throws(BlobStreamError) -> INIFile? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BlobStreamError.s3(.invalidConfiguration, "cannot read '\(path)'")
        }
        return INIFile(text: String(decoding: data, as: UTF8.self))
    }

    init(text: String) {
        var current: String?
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            if rawLine.first == " " || rawLine.first == "\t" { continue }
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                let name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                current = name
                if sections[name] == nil { sections[name] = [:] }
            } else if let current, let equals = line.firstIndex(of: "=") {
                let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                sections[current]?[key] = value
            }
        }
    }

    /// The keys and values of a section, if it is there.
    func section(_ name: String) -> [String: String]? { sections[name] }
}
