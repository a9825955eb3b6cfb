// The upload vocabulary (UploadBody, UploadTask, UploadResult, UploadProgress, UploadClient,
// the error codes) lives in BlobStreamUpload; S3 uploads take and give its types, so it is
// re-exported: `import BlobStreamS3` is enough to upload to S3.
@_exported import BlobStreamUpload
