package override

import (
	"fmt"
	"strings"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// podSpecPaths are where a workload's pod spec is: a Pod's own, the template of a Deployment,
// StatefulSet, DaemonSet, ReplicaSet or Job, and a CronJob's job template.
var podSpecPaths = [][]string{{"spec"}, {"spec", "template", "spec"}, {"spec", "jobTemplate", "spec", "template", "spec"}}

// setImages changes the image of every container and init container of the workload obj as im says,
// and returns how many it found.
func setImages(obj map[string]any, im *v1alpha2.ImageOverride) (int, error) {
	n := 0
	for _, path := range podSpecPaths {
		spec, ok := nested(obj, path)
		if !ok {
			continue
		}
		for _, field := range []string{"containers", "initContainers"} {
			list, _ := spec[field].([]any)
			for i, c := range list {
				container, ok := c.(map[string]any)
				if !ok {
					continue
				}
				image, _ := container["image"].(string)
				changed, err := changeImage(image, im)
				if err != nil {
					return n, fmt.Errorf("image of %s[%d] (%s): %w", strings.Join(append(path, field), "."), i, container["name"], err)
				}
				container["image"] = changed
				n++
			}
		}
	}
	return n, nil
}

// nested is the object at path in obj, if there is one.
func nested(obj map[string]any, path []string) (map[string]any, bool) {
	cur := obj
	for _, k := range path {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// changeImage is the image reference ref ([registry/]repository[:tag][@digest]) with the parts im sets
// replaced. A new tag drops the digest: the digest would pin the old image.
func changeImage(ref string, im *v1alpha2.ImageOverride) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("no image to change")
	}
	rest, digest, _ := strings.Cut(ref, "@")
	registry, repository := "", rest
	if first, after, ok := strings.Cut(rest, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		registry, repository = first, after
	}
	tag := ""
	if i := strings.LastIndexByte(repository, ':'); i >= 0 {
		repository, tag = repository[:i], repository[i+1:]
	}
	if im.Registry != "" {
		if registry == "" && !strings.Contains(repository, "/") {
			repository = "library/" + repository // a Docker Hub official image, as registry mirrors keep it
		}
		registry = strings.TrimSuffix(im.Registry, "/")
	}
	if im.Repository != "" {
		repository = strings.Trim(im.Repository, "/")
	}
	if im.Tag != "" {
		tag, digest = im.Tag, ""
	}
	out := repository
	if registry != "" {
		out = registry + "/" + out
	}
	if tag != "" {
		out += ":" + tag
	}
	if digest != "" {
		out += "@" + digest
	}
	return out, nil
}
