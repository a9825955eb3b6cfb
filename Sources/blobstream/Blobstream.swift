import ArgumentParser
import BlobStreamCLI
import BlobStreamHTTPClient
import BlobStreamS3

/// `blobstream`: read any source BlobStream knows as bytes (cat), checksums (checksum) or
/// facts (info, ls); upload it (upload) and run the demo (demo).
@main
struct Blobstream: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blobstream",
        abstract: "Stream files, gzip streams and other sources through BlobStream.",
        discussion: """
            SOURCE is a URL (file:///p, http(s)://host/p and s3://bucket/key read by ranged GETs, gzip:<url>, \
            archive:<url>!/member, assets-library://asset/asset.JPG?id=ID&ext=JPG with --library), a plain path, \
            PATH!/member for a member of an archive, or - for standard input.
            Exit status: 0 on success, 1 when the work failed (one line on stderr says what, where, and \
            what to do when there is something to do), 2 for a usage error (wrong or missing arguments).
            """,
        version: BlobStreamVersion.current,
        subcommands: [
            Cat.self, Checksum.self, Info.self, List.self, IndexCommand.self, Upload.self, Presign.self, Demo.self,
        ]
    )

    static func main() async {
        // http://, https:// and s3:// sources (ranged GETs): trust roots and proxies from
        // --ca-bundle and the environment (AWS_CA_BUNDLE, SSL_CERT_FILE, HTTPS_PROXY, NO_PROXY);
        // S3's endpoint, region and credentials from --endpoint-url, --region, --profile, else
        // as awscli finds them (AWS_ENDPOINT_URL, AWS_REGION, AWS_PROFILE, ~/.aws), looked up
        // when an s3:// source is made.
        RemoteSchemes.install { registry, caBundle, s3, reads in
            // One connection pool for every http(s):// and s3:// source and the upload of
            // the run (RunConnections).
            let pool = RunConnections.pool(caBundle: caBundle)
            var options = HTTPRangeOptions(connection: pool.connection, pool: pool)
            if reads != .content {
                // An index object: a first answer of 2 MiB for a member index (its whole
                // table for about 20,000 members), 512 KiB for a GZIDX (its point table for
                // about 29,000 points: 116 GiB at the 4 MiB spacing), nothing read ahead;
                // each window is asked for when a decode needs it.
                options.blockSize = reads == .indexObjects ? 2 << 20 : 512 << 10
                options.readAhead = 0
                HTTPSources.register(in: registry, options: options)
                S3Sources.register(in: registry, options: options) {
                    try S3Configuration.resolve(profile: s3.profile, region: s3.region, endpointURL: s3.endpointURL)
                }
                return
            }
            HTTPSources.register(in: registry, options: options)
            // Objects in a store: 8 MiB GETs (awscli's chunk), 3 in flight ahead of the reader
            // (a store such as Swift takes a while to answer each GET); ~32 MiB held at most.
            // A download (a read from the start with no jump) asks for 12 MiB a GET: fewer
            // GETs where the store spends time on each; ~48 MiB held.
            var s3Options = options
            s3Options.blockSize = 8 << 20
            s3Options.downloadBlockSize = 12 << 20
            s3Options.readAhead = 3
            S3Sources.register(in: registry, options: s3Options) {
                try S3Configuration.resolve(profile: s3.profile, region: s3.region, endpointURL: s3.endpointURL)
            }
        }
        await CommandMain.run(Blobstream.self)
    }
}
