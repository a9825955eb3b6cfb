import BlobStream
import BlobStreamCLI
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NIOCore

/// The one connection pool of a `blobstream` run: every http(s):// and s3:// source the run
/// reads and the upload it sends (to an HTTP server or an S3 store) share its clients, as
/// AsyncHTTPClient's convention asks. A command makes it once, in `run()`, and hands it to
/// what it calls (no process-wide state); it lives as long as the process (`CommandMain`
/// ends the run with `exit`).
struct RunConnections {
    /// The run's pool, with the trust roots and proxies of `caBundle` and the environment
    /// (`AWS_CA_BUNDLE`, `SSL_CERT_FILE`, `HTTPS_PROXY`, `NO_PROXY`), and `connectTimeout`
    /// when given (an upload's `--connect-timeout`).
    let pool: HTTPClientPool

    /// The connections of a run (see `pool`).
    init(caBundle: String?, connectTimeout: TimeAmount? = nil) {
        var connection = HTTPConnectionOptions.fromEnvironment(caBundle: caBundle)
        if let connectTimeout { connection.connectTimeout = connectTimeout }
        pool = HTTPClientPool(connection: connection)
    }

    /// The remote schemes a command reads through: http(s):// and s3:// sources over the
    /// run's pool, `s3://` objects read from the store `s3` names (`--endpoint-url`,
    /// `--region`, `--profile`), else as awscli finds it (AWS_ENDPOINT_URL, AWS_REGION,
    /// AWS_PROFILE, ~/.aws), looked up when the first s3:// source is made. The read sizes of
    /// each use are the library's (`StoreSchemes.options(for:onStore:)`).
    func remote(s3: S3SourceSettings = S3SourceSettings()) -> StoreSchemes {
        StoreSchemes(pool: pool) {
            try S3Configuration.resolve(profile: s3.profile, region: s3.region, endpointURL: s3.endpointURL)
        }
    }
}
