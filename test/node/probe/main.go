// Command probe runs as a pod on a real node and checks what a pod of Ferry's needs from its node: the
// Secret volume named by PROBE_SECRET_FILE holds PROBE_SECRET_VALUE, and the API server answers through
// the `kubernetes` Service as the in-cluster configuration reaches it — the ClusterIP from the
// environment the kubelet sets, TLS verified with the projected CA, authenticated with the projected
// service-account token. It asks who it is (a SelfSubjectReview, which only an authenticated caller
// gets answered) and the server's version, prints the answers as JSON, writes them to the termination
// message, and exits 0; on any failure it writes the reason there and exits 1.
//
// Only the standard library, so that it builds in a second into a tiny static image.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Result is what the probe reports; the test decodes it from the termination message.
type Result struct {
	// APIServer is the address the probe reached the API server at.
	APIServer string `json:"apiServer"`
	// User is the name the API server authenticated the probe's token as.
	User string `json:"user"`
	// GitVersion is the API server's version.
	GitVersion string `json:"gitVersion"`
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := probe(ctx)
	var msg []byte
	if err == nil {
		msg, err = json.Marshal(res)
	}
	if err != nil {
		msg = []byte("probe failed: " + err.Error())
	}
	fmt.Println(string(msg))
	_ = os.WriteFile("/dev/termination-log", msg, 0o644)
	if err != nil {
		os.Exit(1)
	}
}

func probe(ctx context.Context) (Result, error) {
	secret, err := os.ReadFile(os.Getenv("PROBE_SECRET_FILE"))
	if err != nil {
		return Result{}, fmt.Errorf("secret volume: %w", err)
	}
	if got, want := string(secret), os.Getenv("PROBE_SECRET_VALUE"); got != want {
		return Result{}, fmt.Errorf("secret volume holds %q, want %q", got, want)
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return Result{}, errors.New("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
	}
	token, err := os.ReadFile(serviceAccountDir + "/token")
	if err != nil {
		return Result{}, fmt.Errorf("service-account token: %w", err)
	}
	caPEM, err := os.ReadFile(serviceAccountDir + "/ca.crt")
	if err != nil {
		return Result{}, fmt.Errorf("service-account CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return Result{}, errors.New("service-account ca.crt holds no certificate")
	}
	base := "https://" + net.JoinHostPort(host, port)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}},
	}
	call := func(method, path, body string, out any) error {
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
		}
		return json.Unmarshal(data, out)
	}
	res := Result{APIServer: base}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	const reviewBody = `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	// The first connection may come before kube-proxy has the Service's rules for this pod's path;
	// retried until the deadline, every error but the last is forgotten.
	for {
		err = call(http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", reviewBody, &review)
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return res, fmt.Errorf("who am I: %w", err)
	}
	res.User = review.Status.UserInfo.Username
	var version struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := call(http.MethodGet, "/version", "", &version); err != nil {
		return res, fmt.Errorf("version: %w", err)
	}
	res.GitVersion = version.GitVersion
	return res, nil
}
