package apply

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SecretRecordStore keeps last-applied records in Secrets of one namespace, gzipped. Secrets rather
// than ConfigMaps, because the record of a Secret holds its data.
type SecretRecordStore struct {
	client    kubernetes.Interface
	namespace string
}

// RecordLabel marks the Secrets a SecretRecordStore writes.
const RecordLabel = "ferry.io/last-applied-record"

const recordKey = "record.json.gz"

// NewSecretRecordStore returns a store writing into namespace, which must exist.
func NewSecretRecordStore(client kubernetes.Interface, namespace string) *SecretRecordStore {
	return &SecretRecordStore{client: client, namespace: namespace}
}

func (s *SecretRecordStore) name(key string) string { return "ferry-record-" + key }

// Get implements RecordStore.
func (s *SecretRecordStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	secret, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, s.name(key), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(secret.Data[recordKey]))
	if err != nil {
		return nil, false, fmt.Errorf("decompress %s/%s: %w", s.namespace, secret.Name, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, false, fmt.Errorf("decompress %s/%s: %w", s.namespace, secret.Name, err)
	}
	return data, true, nil
}

// Put implements RecordStore.
func (s *SecretRecordStore) Put(ctx context.Context, key string, data []byte) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.name(key), Namespace: s.namespace, Labels: map[string]string{RecordLabel: "true"}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{recordKey: buf.Bytes()},
	}
	secrets := s.client.CoreV1().Secrets(s.namespace)
	_, err := secrets.Update(ctx, secret, metav1.UpdateOptions{FieldManager: DefaultFieldManager})
	if apierrors.IsNotFound(err) {
		_, err = secrets.Create(ctx, secret, metav1.CreateOptions{FieldManager: DefaultFieldManager})
	}
	return err
}

// Delete removes the record under key; a missing one is not an error.
func (s *SecretRecordStore) Delete(ctx context.Context, key string) error {
	err := s.client.CoreV1().Secrets(s.namespace).Delete(ctx, s.name(key), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
