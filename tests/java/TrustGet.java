// The Java client of tests/java_trust_test.sh, run as a single file
// (java TrustGet.java ...) with nothing but the JVM's defaults and the
// environment: JAVA_TOOL_OPTIONS from `sbxctl mock env` names the trust.
//   TrustGet get URL      HTTPS GET of URL with the default SSLContext;
//                         prints the body, exits 0 on 200, 1 otherwise
//                         (a refused certificate: the exception, exit 1)
//   TrustGet issuers      how many CAs the default trust manager accepts
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

public class TrustGet {
    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("issuers")) {
            TrustManagerFactory f = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            f.init((KeyStore) null); // the default: javax.net.ssl.trustStore, else cacerts
            for (TrustManager t : f.getTrustManagers()) {
                if (t instanceof X509TrustManager)
                    System.out.println(((X509TrustManager) t).getAcceptedIssuers().length);
            }
            return;
        }
        if (args.length != 2 || !args[0].equals("get")) {
            System.err.println("usage: TrustGet get URL | TrustGet issuers");
            System.exit(2);
        }
        HttpsURLConnection c = (HttpsURLConnection) new URL(args[1]).openConnection();
        c.setConnectTimeout(10_000);
        c.setReadTimeout(20_000);
        try {
            int status = c.getResponseCode();
            try (InputStream in = c.getInputStream()) {
                System.out.print(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            }
            System.exit(status == 200 ? 0 : 1);
        } catch (javax.net.ssl.SSLException e) {
            System.err.println("TrustGet: " + e);
            System.exit(1);
        }
    }
}
