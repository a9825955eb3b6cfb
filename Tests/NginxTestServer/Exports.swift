// The server itself is the shipped `BlobStreamNginxTestSupport`; this target adds the
// suite's own peers and checks (which use Swift Testing) on top of it.
@_exported import BlobStreamNginxTestSupport
