// The server itself is the shipped `BlobStreamNginxTestSupport`; this target adds the
// suite's own peers and checks (which use Swift Testing) on top of it.
@_exported import BlobStreamNginxTestSupport
// The peers in the test process (SwiftNIO), for the suites that use nginx beside them.
@_exported import HTTPTestPeers
