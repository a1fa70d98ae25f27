// @20minutes/s3rver, which checks SigV4 signatures (key S3RVER, secret
// S3RVER), on 127.0.0.1 with the bucket pcrtest.
// usage: node s3rver_sigv4.cjs MODULE_DIR PORT STORE_DIR
const [moduleDir, port, directory] = process.argv.slice(2);
const S3rver = require(moduleDir);
new S3rver({ address: "127.0.0.1", port: Number(port), directory, silent: true,
             configureBuckets: [{ name: "pcrtest" }] })
  .run()
  .then(() => console.log("ready"), (e) => { console.error(e); process.exit(1); });
