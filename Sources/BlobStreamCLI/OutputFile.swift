// Every file the tool writes (`--output`, an upload's index): the library's `OutputFile`.

import BlobStreamSystem

/// A file the tool writes: only to a new path or over a regular file that is none of the
/// command's inputs, through a temporary file renamed over it; anything else is refused with
/// `.invalidDestination` (status 2) before anything is written. See the library's type.
package typealias OutputFile = BlobStreamSystem.OutputFile
