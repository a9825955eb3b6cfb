// The upload vocabulary (UploadBody, MultipartBody, UploadOptions, UploadURL, UploadProgress,
// UploadResult, UploadTask, the error codes) lives in BlobStreamUpload; re-exported so that
// code written against `import BlobStreamNetworking` keeps compiling.
@_exported import BlobStreamUpload
