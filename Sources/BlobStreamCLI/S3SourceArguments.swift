import ArgumentParser
import Foundation

/// Where `s3://bucket/key` sources are read from, as the reading commands' options give it;
/// what is not given is found as awscli finds it (environment, profile files).
package struct S3SourceSettings: Sendable, Equatable {
    /// `--endpoint-url`; nil: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's, AWS.
    package var endpointURL: String?
    /// `--region`; nil: AWS_REGION, AWS_DEFAULT_REGION, the profile's, us-east-1.
    package var region: String?
    /// `--profile`; nil: AWS_PROFILE, then default.
    package var profile: String?

    package init(endpointURL: String? = nil, region: String? = nil, profile: String? = nil) {
        self.endpointURL = endpointURL
        self.region = region
        self.profile = profile
    }
}

/// The options of the reading commands (`cat`, `checksum`) for `s3://bucket/key` sources.
package struct S3SourceArguments: ParsableArguments {
    @Option(
        help:
            "s3:// sources: the S3 endpoint (as awscli's --endpoint-url; default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's, AWS)."
    )
    package var endpointURL: String?

    @Option(
        help:
            "s3:// sources: the region to sign for (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's, us-east-1)."
    )
    package var region: String?

    @Option(help: "s3:// sources: the credentials profile (default: AWS_PROFILE, then default).")
    package var profile: String?

    package init() {}

    /// The values given.
    package var settings: S3SourceSettings {
        S3SourceSettings(endpointURL: endpointURL, region: region, profile: profile)
    }
}
