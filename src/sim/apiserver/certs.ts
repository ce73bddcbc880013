/**
 * The embedded server's TLS identity: one self-signed EC P-256 certificate (CA:true, SANs 127.0.0.1,
 * ::1, localhost) generated with `selfsigned` once per process and reused by every server.
 */
import selfsigned from 'selfsigned';

/** PEM key pair and certificate. */
export interface ServerCert {
  key: string;
  cert: string;
}

let cached: Promise<ServerCert> | undefined;

/** The process-wide certificate (generated on first call, ~10 ms with EC keys). */
export function serverCert(): Promise<ServerCert> {
  if (!cached) {
    const notBefore = new Date(Date.now() - 60 * 60 * 1000);
    const notAfter = new Date(Date.now() + 365 * 24 * 60 * 60 * 1000);
    cached = selfsigned
      .generate([{ name: 'commonName', value: 'capenter-embedded-apiserver' }], {
        keyType: 'ec',
        curve: 'P-256',
        algorithm: 'sha256',
        notBeforeDate: notBefore,
        notAfterDate: notAfter,
        extensions: [
          { name: 'basicConstraints', cA: true, critical: true },
          {
            name: 'keyUsage',
            digitalSignature: true,
            keyEncipherment: true,
            keyCertSign: true,
            critical: true,
          },
          { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
          {
            name: 'subjectAltName',
            altNames: [
              { type: 2, value: 'localhost' },
              { type: 7, ip: '127.0.0.1' },
              { type: 7, ip: '::1' },
            ],
          },
        ],
      })
      .then((r) => ({ key: r.private, cert: r.cert }));
    cached.catch(() => {
      cached = undefined;
    });
  }
  return cached;
}
