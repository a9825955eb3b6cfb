import BlobStream
import BlobStreamCLI
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NIOCore

/// The one connection pool of a `blobstream` run: every http(s):// and s3:// source the run
/// reads and the upload it sends (to an HTTP server or an S3 store) share its clients, as
/// AsyncHTTPClient's convention asks. It lives as long as the process (`CommandMain` ends the
/// run with `exit`).
enum RunConnections {
    private static let made = Locked<HTTPClientPool?>(nil)

    /// The run's pool, made on first use with the trust roots and proxies of `caBundle` and
    /// the environment (`AWS_CA_BUNDLE`, `SSL_CERT_FILE`, `HTTPS_PROXY`, `NO_PROXY`), and
    /// `connectTimeout` when given. An upload asks first (with its `--connect-timeout`),
    /// before it opens its source; later calls get the same pool.
    static func pool(caBundle: String?, connectTimeout: TimeAmount? = nil) -> HTTPClientPool {
        made.withLock { made in
            if let made { return made }
            var connection = HTTPConnectionOptions.fromEnvironment(caBundle: caBundle)
            if let connectTimeout { connection.connectTimeout = connectTimeout }
            let pool = HTTPClientPool(connection: connection)
            made = pool
            return pool
        }
    }

    /// The remote schemes a command reads through: http(s):// and s3:// sources over the
    /// run's pool (trust roots and proxies from `caBundle` and the environment), `s3://`
    /// objects read from the store `s3` names (`--endpoint-url`, `--region`, `--profile`),
    /// else as awscli finds it (AWS_ENDPOINT_URL, AWS_REGION, AWS_PROFILE, ~/.aws), looked up
    /// when the first s3:// source is made. The read sizes of each use are the library's
    /// (`StoreSchemes.options(for:onStore:)`).
    static func remote(caBundle: String?, s3: S3SourceSettings = S3SourceSettings()) -> StoreSchemes {
        StoreSchemes(pool: pool(caBundle: caBundle)) {
            try S3Configuration.resolve(profile: s3.profile, region: s3.region, endpointURL: s3.endpointURL)
        }
    }
}
